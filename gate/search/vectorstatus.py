"""What `memory-gate doctor` says about meaning on a local memory: which source is in force and
whether it answers, what the vector index (gate.search.vectors) holds, how many facts wait for a
vector, and the problems with their mends. Apart from the index because it is read by doctor
alone, and asks the endpoint a probe of its own.
"""

from __future__ import annotations

import apsw

from gate.engine import store
from gate.search import vectors
from gate.search.embeddings import DOCUMENT, Endpoint, VectorError

# -- reporting ------------------------------------------------------------------------------

PROBE_TIMEOUT = 5.0


def status(conn: apsw.Connection, endpoint: Endpoint | None, why_not: str | None = None) -> tuple[dict, list[str]]:
    """What `memory-gate doctor` says about meaning: which source is in force (the installed
    model, or the endpoint) and whether it answers, the model and dimension, how many facts lack
    a vector; and the problems, each with its mend. `why_not`: why there is no source."""
    from gate.search import sources

    report: dict = {"in_force": sources.named(endpoint), "endpoint": endpoint.url if endpoint else None}
    problems: list[str] = []
    if endpoint is None:
        report["note"] = why_not or "search runs on words only"
        return report, problems
    report |= {"model": endpoint.model, "max_distance": endpoint.max_distance}
    try:
        store.require_vectors(conn)
        report["sqlite_vec"] = conn.execute("SELECT vec_version()").get
    except store.StoreError as error:
        report["sqlite_vec"] = "not loaded"
        return report, [str(error)]
    found = vectors.space(conn)
    if found is not None:
        count = vectors.stored_count(conn)
        prefilter = found.center is not None and count > vectors.EXACT_LIMIT
        report["stored"] = {
            "model": found.model,
            "dimension": found.dimension,
            "vectors": count,
            "search": f"bit prefilter, about {vectors.POOL} rescored" if prefilter else "exact",
        }
    report["facts_without_vector"] = vectors.missing(conn)
    try:
        probe = endpoint.patient().embed(["memory-gate doctor"], role=DOCUMENT, timeout=PROBE_TIMEOUT)
    except VectorError as error:
        report["answers"] = str(error)
        problems.append(f"{error}: start it or fix MEMORY_GATE_EMBED_URL; meanwhile search runs on words only")
        return report, problems
    report["answers"] = f"{probe.model}, {probe.dimension} dimensions"
    if found is not None:
        try:
            vectors.check(found, probe)
        except VectorError as error:
            problems.append(str(error))
    if report["facts_without_vector"] and not problems:
        report["advice"] = (
            f"writes embed up to {vectors.WAITING_BATCH} waiting facts each; `memory-gate reindex` embeds all now"
        )
    return report, problems
