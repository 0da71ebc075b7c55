"""The inbox's HTML comes from Jinja2 templates (`templates/`) with autoescape on, as
Starlette's `Jinja2Templates` sets them up: every value a template prints is escaped, so a
task's texts (its messages, schemas, outputs, names) can never be markup. Only what a template
itself renders (a macro's output) is printed as it is.

The templates are indented for reading; the pages are sent without that indentation (see
`Compact`), the same bytes as one written on a single line."""

from __future__ import annotations

import re
from collections.abc import Callable

from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.ext import Extension

STATIC = "/inbox/static"

_BREAK = re.compile(r"[ \t]*\n\s*")
_ENDS_MARKUP = (">", "}}", "%}", "#}")
_STARTS_MARKUP = ("<", "{{", "{%", "{#")


class Compact(Extension):
    """A line break in a template, with the indentation around it, is one space between two
    words (in text, or inside a statement's expression) and nothing next to markup (a tag,
    `{{ }}`, `{% %}`, `{# #}`): text that needs a space before or after markup keeps it on
    the markup's line."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        def join(found: re.Match[str]) -> str:
            start, end = found.start(), found.end()
            if start == 0 or end == len(source):
                return ""
            if source.endswith(_ENDS_MARKUP, 0, start):
                return ""
            return "" if source.startswith(_STARTS_MARKUP, end) else " "

        return _BREAK.sub(join, source)


ENVIRONMENT = Environment(
    loader=PackageLoader("mcp_server.inbox", "templates"),
    autoescape=True,
    # A value a page forgets to pass is an error, never an empty string.
    undefined=StrictUndefined,
    extensions=[Compact],
    # The templates ship with the package: read once, never looked at again.
    auto_reload=False,
)
ENVIRONMENT.globals["STATIC"] = STATIC


def render(template: str, **context: object) -> str:
    """The page or fragment `template` renders with `context`."""
    return ENVIRONMENT.get_template(template).render(context)


def render_page(
    template: str,
    *,
    title: str,
    user: str | None = None,
    logout_csrf: str | None = None,
    live: str | None = None,
    **context: object,
) -> str:
    """A whole page (`template` extends base.html). `user`: who is signed in (shown in the
    header); `logout_csrf`: a sign-out button (token modes); `live`: the event stream the
    page's script follows."""
    return render(template, title=title, user=user, logout_csrf=logout_csrf, live=live, **context)


def macro(template: str, name: str) -> Callable[..., object]:
    """A macro of `template`, to render one part alone (a fragment the script refreshes)."""
    found: Callable[..., object] = getattr(ENVIRONMENT.get_template(template).module, name)
    return found
