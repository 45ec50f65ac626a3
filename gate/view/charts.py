"""Small inline SVG charts: stacked bars over days, and horizontal bars by category. Drawn as
markup on the server, so the page needs no chart framework and nothing fetched; each chart
carries a <title> and a table-like text fallback for people who cannot see it."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

WIDTH = 560
HEIGHT = 150
PAD = 24


def stacked_days(days: Sequence[str], series: Sequence[tuple[str, str, Sequence[float]]], *, title: str) -> str:
    """Bars per day, each stacked from the series in order: (label, css class, values)."""
    if not days:
        return f'<p class="empty">{escape(title)}: nothing yet.</p>'
    totals = [sum(values[i] for _, _, values in series) for i in range(len(days))]
    top = max(max(totals), 1)
    slot = (WIDTH - 2 * PAD) / len(days)
    bar = min(max(2.0, slot * 0.7), 40.0)  # one day alone is a bar, not a wall
    parts = [_frame(title), _axis(top)]
    for i, day in enumerate(days):
        x = PAD + i * slot + (slot - bar) / 2
        y: float = HEIGHT - PAD
        for label, css, values in series:
            value = values[i]
            if not value:
                continue
            height = (HEIGHT - 2 * PAD) * value / top
            y -= height
            parts.append(
                f'<rect class="{css}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{height:.1f}">'
                f"<title>{escape(day)}: {value:g} {escape(label)}</title></rect>"
            )
    parts.append(_label(PAD, HEIGHT - 6, days[0], "start"))
    if len(days) > 1:
        parts.append(_label(WIDTH - PAD, HEIGHT - 6, days[-1], "end"))
    parts.append("</svg>")
    legend = "".join(f'<span class="key {css}"></span>{escape(label)} ' for label, css, _ in series)
    return "".join(parts) + f'<p class="legend">{legend}</p>'


def bars(items: Sequence[tuple[str, float]], *, title: str, unit: str = "") -> str:
    """One horizontal bar per (label, value)."""
    if not items or not any(value for _, value in items):
        return f'<p class="empty">{escape(title)}: nothing yet.</p>'
    top = max(value for _, value in items) or 1
    row = 24
    height = row * len(items) + 8
    parts = [_frame(title, height)]
    for i, (label, value) in enumerate(items):
        y = 4 + i * row
        width = (WIDTH - 200) * value / top
        parts.append(f'<text class="label" x="0" y="{y + 16}">{escape(label)}</text>')
        parts.append(
            f'<rect class="bar" x="110" y="{y + 3}" width="{max(width, 1):.1f}" height="{row - 8}">'
            f"<title>{escape(label)}: {value:g}{unit}</title></rect>"
        )
        parts.append(f'<text class="value" x="{116 + width:.1f}" y="{y + 16}">{value:g}{escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _frame(title: str, height: int = HEIGHT) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )


def _axis(top: float) -> str:
    base = HEIGHT - PAD
    return (
        f'<line class="axis" x1="{PAD}" y1="{base}" x2="{WIDTH - PAD}" y2="{base}"/>'
        f'<text class="label" x="{PAD}" y="{PAD - 8}">{top:g}</text>'
        f'<line class="grid" x1="{PAD}" y1="{PAD}" x2="{WIDTH - PAD}" y2="{PAD}"/>'
    )


def _label(x: float, y: float, text: str, anchor: str) -> str:
    return f'<text class="label" x="{x}" y="{y}" text-anchor="{anchor}">{escape(text)}</text>'
