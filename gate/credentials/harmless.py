"""Values a shape matched that are safe to keep all the same: keys public by design, AWS's
documented example keys where the text says they are an example, a WebSocket handshake's nonce
and a sealed secret's ciphertext. Asked of each match after the shapes (gate.credentials), so a
secret beside such a value is still found. Standard library only, and no `re`: on the hooks' path.
"""

from gate.credentials.values import _words

# Prefixes of keys a provider issues to be shipped in a web page or an app: Stripe's publishable
# keys, Mapbox's public tokens, PostHog's project keys.
_PUBLIC_PREFIXES = ("pk_live_", "pk_test_", "pk.eyJ", "phc_")
# The last words of names whose value is public whatever its shape: a reCAPTCHA, hCaptcha or
# Turnstile site key (its secret has the same shape and another name), a publishable key.
_PUBLIC_NAMES = (("sitekey",), ("site", "key"), ("publishablekey",), ("publishable", "key"), ("public", "key"))
# Base64 characters: a sealed secret's ciphertext is made of these.
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")


def _name_before(text: str, start: int) -> list[str]:
    """The words of the name standing just before a value on its line (`data-sitekey="`,
    `Sec-WebSocket-Key: `, `siteKey: '`), lowercased."""
    line = text[max(0, text.rfind("\n", 0, start) + 1, start - 80) : start]
    line = line.rstrip(" \t\"'`:=")
    at = len(line)
    while at and (line[at - 1].isalnum() or line[at - 1] in "_-."):
        at -= 1
    return _words(line[at:])


def _says_example(text: str, start: int, end: int) -> bool:
    """Whether the text calls what it shows an example ("docs example:"): the word, not a part
    of a key (`...7EXAMPLE`) nor a domain (`example.com`, `user@example.org`)."""
    low = text.lower()
    at = low.find("example")
    while at >= 0:
        before, after = low[at - 1 : at], low[at + 7 : at + 9].removeprefix("s")[:1]
        word = not (before.isalnum() or before in ".@") and not (after.isalnum() or after == ".")
        if word and not start <= at < end:
            return True
        at = low.find("example", at + 1)
    return False


def harmless(text: str, start: int, end: int) -> bool:
    """Whether the value at text[start:end], which a shape took for a credential, is safe to keep."""
    value = text[start:end]
    if value.startswith(_PUBLIC_PREFIXES):
        return True
    close = text[max(0, start - 80) : start].lower()
    name = _name_before(text, start) if "site" in close or "publi" in close or "websocket" in close else []
    if any(tuple(name[-len(last) :]) == last for last in _PUBLIC_NAMES):
        return True
    # AWS's documentation marks its example keys so (`AKIAI44QH8DHBEXAMPLE`, `...bEXAMPLEKEY`);
    # alone they stand for a real key (the tests use them so), in a text saying "example" they are one.
    if value.endswith(("EXAMPLE", "EXAMPLEKEY")) and _says_example(text, start, end):
        return True
    # A WebSocket handshake: the client's nonce is 16 random bytes in base64, the server's answer a
    # SHA-1 of it; both are sent in the clear on every connection.
    if "".join(name) in ("secwebsocketkey", "secwebsocketaccept") and len(value) in (24, 28) and value.endswith("="):
        return True
    # A sealed secret (kubeseal's output): ciphertext under `encryptedData`, safe in a repository.
    return (
        value.startswith("Ag")
        and len(value) >= 64
        and _BASE64.issuperset(value)
        and "encrypteddata" in text[:start].lower()
    )
