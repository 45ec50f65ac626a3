"""The README's opening transcript and the log under it come from one real run
(scripts/transcript): a fresh run must give the same block, ids, times and dates aside."""

from __future__ import annotations

import subprocess
import sys

from claude_harness import needs_claude
from conftest import REPO


@needs_claude
def test_the_readme_transcript_is_what_a_fresh_run_prints():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "transcript"), "--check"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
