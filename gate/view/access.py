"""Who may use the page: whoever holds the token in the URL `memory-gate view` printed.

The page binds to 127.0.0.1, but any local process, and any web page open in the owner's
browser, can reach a loopback port. So:

- every request carries the random token (`?t=...`); without it the answer is 403 and nothing
  is read;
- the Host header must name the loopback address the server listens on, so a hostile site
  cannot reach it under its own name (DNS rebinding);
- a change is a POST only, and must carry the CSRF token the page's forms hold and come from
  the page's own origin (the Origin and Sec-Fetch-Site headers browsers send), so a page
  elsewhere cannot submit a form to it even if it learned the URL.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from urllib.parse import urlencode

TOKEN = "t"


class Refused(Exception):
    """The request may not be served; the message says why (and is all the answer says)."""


@dataclass
class Guard:
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def url(self, path: str = "/", **params: object) -> str:
        """A link within the page: the token first, then the non-empty parameters."""
        query = {TOKEN: self.token} | {key: value for key, value in params.items() if value not in (None, "", False)}
        return f"{path}?{urlencode(query)}"

    def check(self, host: str | None, query_token: str | None) -> None:
        """Raise Refused unless this request, of any method, may be served at all."""
        if host not in self.hosts():
            raise Refused(f"this page answers on {self.origin} only")
        if not query_token or not hmac.compare_digest(query_token, self.token):
            raise Refused(
                "this page needs the token in the URL that `memory-gate view` printed; run it again for a new one"
            )

    def check_change(self, headers, form_csrf: str | None) -> None:
        """Raise Refused unless this POST comes from the page itself."""
        origin = headers.get("origin")
        if origin is not None and origin not in {f"http://{host}" for host in self.hosts()}:
            raise Refused(f"a change from another site ({origin}) is refused")
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            raise Refused(f"a change from another site (Sec-Fetch-Site: {site}) is refused")
        if not form_csrf or not hmac.compare_digest(form_csrf, self.csrf):
            raise Refused("this change does not carry the page's form token: reload the page and try again")
