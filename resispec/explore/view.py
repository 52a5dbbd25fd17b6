"""The explorer's page: widgets that set a ``State``, and Bokeh figures and tables that show its ``Display``.

Nothing here computes a number of the toolkit: every value comes from ``resispec.explore.model``.
Figures are built once; an edit replaces their data sources and the HTML of the tables.
"""

from __future__ import annotations

import html
import math

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource, FixedTicker, HoverTool, PointDrawTool
from bokeh.plotting import figure

from resispec import VERIFIERS
from resispec.explore import presets
from resispec.explore.model import (
    LAW_LIMIT,
    MAX_K,
    MAX_VOCAB,
    Display,
    State,
    VerifierNumbers,
    display,
    edited_distribution,
)
from resispec.explore.tokens import decode_tokens

P_COLOUR, Q_COLOUR, BIAS_COLOUR, EXACT_COLOUR = "#1f77b4", "#ff7f0e", "#d62728", "#2ca02c"
PALETTE = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#d62728",
           "#ff7f0e", "#aec7e8", "#98df8a", "#c5b0d5", "#c49c94")
PRESETS = ("counterexample", "dirichlet", "zipf", "llm-like", "logged row")
STYLE = """
<style>
table.numbers { border-collapse: collapse; font-size: 13px; }
table.numbers th, table.numbers td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; }
table.numbers td.bias, span.bias { color: #d62728; font-weight: bold; }
table.numbers td.exact { color: #2ca02c; }
</style>
"""


def _format(value: float | None, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"


def _law_text(law: np.ndarray) -> str:
    return "(" + ", ".join(f"{value:.4f}".rstrip("0").rstrip(".") if value else "0" for value in law) + ")"


def verifier_label(name: str) -> str:
    """A verifier's name, marked when it is a known-biased control."""
    return name if VERIFIERS[name].claims_exact else f"{name} (control)"


def numbers_table(shown: Display) -> str:
    """The per-verifier table (HTML): acceptance against the optimum of its drafting, the exact law
    and its max error (red when biased), the drift method and the live draw's path."""
    labels = shown.state.token_labels
    rows = []
    for numbers in shown.verifiers:
        name = html.escape(verifier_label(numbers.name))
        if numbers.refused:
            rows.append(f'<tr data-verifier="{numbers.name}"><td>{name}</td><td colspan="7">'
                        f'{html.escape(numbers.refused)}</td></tr>')
            continue
        ratio = numbers.acceptance / numbers.optimum if numbers.acceptance is not None and numbers.optimum else None
        law = _law_text(numbers.law) if numbers.law is not None else html.escape(numbers.law_note)
        verdict = "bias" if numbers.biased else "exact" if numbers.max_error is not None else ""
        draw = html.escape(numbers.draw.path(labels)) if numbers.draw else ""
        rows.append(
            f'<tr data-verifier="{numbers.name}"><td>{name}</td><td>{numbers.drafting}</td>'
            f'<td class="acceptance">{_format(numbers.acceptance)}</td><td>{_format(ratio)}</td>'
            f'<td class="law {verdict}">{law}</td><td class="max-error {verdict}">{_format(numbers.max_error, 2)}</td>'
            f'<td>{html.escape(numbers.drift_method or "not in the simulator")}</td><td class="draw">{draw}</td></tr>')
    header = ("<tr><th>verifier</th><th>drafting</th><th>acceptance</th><th>/ optimum of its drafting</th>"
              "<th>exact output law</th><th>max |law - p|</th><th>drift curve</th><th>live draw (seeded)</th></tr>")
    best = shown.bounds
    summary = (f"<p>optima at k = {shown.state.k}: alpha* (i.i.d.) = {_format(best.iid)}, alpha*-WOR = "
               f"{_format(best.wor)} ({best.wor_method}), top-k = {_format(best.topk)}; p = "
               f"<span class='p-law'>{_law_text(shown.state.p)}</span></p>")
    return STYLE + summary + f'<table class="numbers" id="numbers">{header}{"".join(rows)}</table>'


def _curves(numbers: list[VerifierNumbers], attribute: str) -> dict:
    """Line data (one line per verifier with a drift curve) for a multi_line glyph."""
    shown = [entry for entry in numbers if getattr(entry, attribute)]
    return {
        "xs": [list(range(1, len(getattr(entry, attribute)) + 1)) for entry in shown],
        "ys": [list(getattr(entry, attribute)) for entry in shown],
        "name": [verifier_label(entry.name) for entry in shown],
        "color": [PALETTE[list(VERIFIERS).index(entry.name) % len(PALETTE)] for entry in shown],
    }


def _points(curves: dict) -> dict:
    """The vertices of ``_curves`` as markers (a one-step curve, e.g. at k = 1 or pooled's, is a point)."""
    data: dict[str, list] = {"x": [], "y": [], "name": [], "color": []}
    for xs, ys, name, color in zip(curves["xs"], curves["ys"], curves["name"], curves["color"]):
        data["x"] += xs
        data["y"] += ys
        data["name"] += [name] * len(xs)
        data["color"] += [color] * len(xs)
    return data


def _law_points(shown: Display) -> dict:
    """One marker per (verifier, token) of every enumerated law: red for a biased one, green for exact."""
    data: dict[str, list] = {"x": [], "y": [], "name": [], "color": []}
    labels = shown.state.token_labels
    for entry in shown.verifiers:
        if entry.law is None:
            continue
        data["x"] += list(labels)
        data["y"] += [float(value) for value in entry.law]
        data["name"] += [verifier_label(entry.name)] * len(labels)
        data["color"] += [BIAS_COLOUR if entry.biased else EXACT_COLOUR] * len(labels)
    return data


class Explorer:
    """The page. Keyword arguments set the initial state: ``preset`` (one of ``PRESETS``), ``k``,
    ``verifiers`` (names; default all), ``seed``."""

    def __init__(self, preset: str = "counterexample", k: int = 2, verifiers: tuple[str, ...] | None = None,
                 seed: int = 0) -> None:
        self.preset = pn.widgets.Select(label="preset", options=list(PRESETS), value=preset)
        self.vocab = pn.widgets.IntSlider(label="V (tokens)", start=2, end=MAX_VOCAB, value=8)
        self.alpha = pn.widgets.FloatSlider(label="Dirichlet alpha", start=0.05, end=5.0, step=0.05, value=1.0)
        self.zipf_s = pn.widgets.FloatSlider(label="Zipf exponent s", start=0.2, end=3.0, step=0.05, value=1.1)
        self.temperature = pn.widgets.FloatSlider(label="temperature", start=0.2, end=3.0, step=0.05, value=1.0)
        self.top_k = pn.widgets.IntSlider(label="top-k (0: none)", start=0, end=MAX_VOCAB, value=0)
        self.row = pn.widgets.IntSlider(label="logged row", start=0, end=presets.logged_rows() - 1, value=0)
        self.pair_seed = pn.widgets.IntInput(label="pair seed", value=0, start=0)
        self.p_text = pn.widgets.TextInput(label="p (target), comma-separated", css_classes=["p-values"])
        self.q_text = pn.widgets.TextInput(label="q (draft), comma-separated", css_classes=["q-values"])
        self.k = pn.widgets.RadioButtonGroup(label="k", options=list(range(1, MAX_K + 1)), value=k,
                                             css_classes=["k-choice"])
        names = list(VERIFIERS) if verifiers is None else list(verifiers)
        self.verifiers = pn.widgets.CheckBoxGroup(
            label="verifiers", options={verifier_label(name): name for name in VERIFIERS}, value=names)
        self.seed = pn.widgets.IntInput(label="draw seed", value=seed, start=0)
        self.draw_button = pn.widgets.Button(label="draw", color="primary")
        self.residual_of = pn.widgets.Select(label="residuals of", options=list(VERIFIERS), value="resispec")
        self.law_limit = pn.widgets.IntInput(label="enumerate the exact law up to (tuples)", value=LAW_LIMIT, start=1)
        self.note = pn.pane.HTML("", css_classes=["note"])
        self.table = pn.pane.HTML("", sizing_mode="stretch_width")
        self.residual_note = pn.pane.Str("")
        self.p_values, self.q_values, self.labels = presets.counterexample()
        self._build_figures()
        self._load_preset()
        for widget in (self.preset, self.vocab, self.alpha, self.zipf_s, self.temperature, self.top_k, self.row,
                       self.pair_seed):
            widget.param.watch(lambda _: self._load_preset(), "value")
        for widget in (self.k, self.verifiers, self.seed, self.law_limit, self.residual_of):
            widget.param.watch(lambda _: self.redraw(), "value")
        self.p_text.param.watch(lambda _: self._typed(), "value")
        self.q_text.param.watch(lambda _: self._typed(), "value")
        self.draw_button.on_click(lambda _: setattr(self.seed, "value", self.seed.value + 1))
        self.layout = self._layout()

    # --- the state ---------------------------------------------------------------------------------

    def state(self) -> State:
        return State(self.p_values, self.q_values, int(self.k.value), tuple(self.verifiers.value),
                     int(self.seed.value), self.labels, int(self.law_limit.value))

    def _preset_widgets(self) -> dict[str, list]:
        """The parameters each preset reads (the others are hidden)."""
        return {"counterexample": [], "dirichlet": [self.vocab, self.pair_seed, self.alpha],
                "zipf": [self.vocab, self.pair_seed, self.zipf_s],
                "llm-like": [self.vocab, self.pair_seed, self.temperature, self.top_k],
                "logged row": [self.vocab, self.row]}

    def _load_preset(self) -> None:
        used = self._preset_widgets()
        for widget in {id(widget): widget for widgets in used.values() for widget in widgets}.values():
            widget.visible = any(widget is chosen for chosen in used[self.preset.value])
        try:
            chosen = self._preset_pair()
        except ValueError as error:
            self._refuse(str(error))
            return
        self.p_values, self.q_values, self.labels = chosen
        self._set_texts()
        self.note.object = ""
        self.redraw()

    def _preset_pair(self) -> presets.Preset:
        name, vocab, seed = self.preset.value, self.vocab.value, self.pair_seed.value
        if name == "dirichlet":
            return presets.dirichlet(self.alpha.value, vocab, seed)
        if name == "zipf":
            return presets.zipf(self.zipf_s.value, vocab, seed)
        if name == "llm-like":
            return presets.llm_like(self.temperature.value, self.top_k.value, vocab, seed)
        if name == "logged row":
            return presets.logged_row(self.row.value, vocab, decode_tokens)
        return presets.counterexample()

    def _set_texts(self) -> None:
        self._quiet = True
        self.p_text.value = ", ".join(f"{value:.4g}" for value in self.p_values)
        self.q_text.value = ", ".join(f"{value:.4g}" for value in self.q_values)
        self._quiet = False

    _quiet = False

    def _typed(self) -> None:
        if self._quiet:
            return
        try:
            p = edited_distribution(_numbers(self.p_text.value, "p (target)"), "p (target)")
            q = edited_distribution(_numbers(self.q_text.value, "q (draft)"), "q (draft)")
            if p.values.size != q.values.size:
                raise ValueError(f"p and q need the same number of tokens: {p.values.size} != {q.values.size}")
        except ValueError as error:
            self._refuse(str(error))
            return
        self._edited(p.values, q.values, "; ".join(filter(None, [p.note, q.note])))

    def _edited(self, p: np.ndarray, q: np.ndarray, note: str) -> None:
        if p.size != len(self.labels):
            self.labels = ()
        self.p_values, self.q_values = p, q
        self.note.object = html.escape(note)
        self.redraw()

    def _refuse(self, message: str) -> None:
        self.note.object = f'<span class="bias">refused: {html.escape(message)}</span>'

    def _dragged(self, attr, old, new) -> None:
        """A bar top dragged in the pair figure: clamp at 0, renormalise, redraw."""
        if self._quiet:
            return
        heights = np.maximum(np.asarray(new["y"], dtype=np.float64), 0.0)
        size = self.p_values.size
        try:
            p = edited_distribution(heights[:size], "p (target)")
            q = edited_distribution(heights[size:], "q (draft)")
        except ValueError as error:
            self._refuse(str(error))
            self.redraw()
            return
        self._set_texts()
        self._edited(p.values, q.values, "; ".join(filter(None, ["dragged", p.note, q.note])))
        self._set_texts()

    # --- figures -----------------------------------------------------------------------------------

    def _build_figures(self) -> None:
        self.pair_source = ColumnDataSource({"x": [], "top": [], "color": []})
        self.handles = ColumnDataSource({"x": [], "y": []})
        self.pair_figure = figure(height=260, sizing_mode="stretch_width",
                                  title="p (blue) and q (orange): drag a bar top", x_range=(-0.5, 2.5),
                                  y_range=(0, 1), tools="reset")
        self.pair_figure.vbar(x="x", top="top", width=0.38, color="color", source=self.pair_source)
        handles = self.pair_figure.scatter(x="x", y="y", size=10, color="black", source=self.handles)
        self.pair_figure.add_tools(PointDrawTool(renderers=[handles], add=False, drag=True))
        self.pair_figure.toolbar.active_drag = self.pair_figure.tools[-1]
        self.handles.on_change("data", self._dragged)

        self.law_bars = ColumnDataSource({"x": [], "top": []})
        self.law_points = ColumnDataSource({"x": [], "y": [], "name": [], "color": []})
        self.law_figure = figure(height=260, sizing_mode="stretch_width", x_range=[], tools="",
                                 title="exact output law of each verifier (markers) over p (grey bars); red = biased")
        self.law_figure.vbar(x="x", top="top", width=0.8, color="#cccccc", source=self.law_bars)
        self.law_figure.scatter(x="x", y="y", color="color", size=9, alpha=0.7, source=self.law_points)
        self.law_figure.add_tools(HoverTool(tooltips=[("verifier", "@name"), ("law", "@y")]))

        self.drift_source, self.drift_points = (ColumnDataSource({"xs": [], "ys": [], "name": [], "color": []}),
                                                ColumnDataSource({"x": [], "y": [], "name": [], "color": []}))
        self.tv_source, self.tv_points = (ColumnDataSource({"xs": [], "ys": [], "name": [], "color": []}),
                                          ColumnDataSource({"x": [], "y": [], "name": [], "color": []}))
        self.drift_figure = self._curve_figure(self.drift_source, self.drift_points,
                                               "acceptance of candidate i given i - 1 rejections")
        self.tv_figure = self._curve_figure(self.tv_source, self.tv_points,
                                            "TV(residual after i - 1 rejections, proposal of i)")
        self._residual_figures()

    def _residual_figures(self) -> None:
        """One small bar chart per step i: the residual after i - 1 rejections (bars) against q (line)."""
        self.residual_sources, self.residual_charts = [], []
        for step in range(1, MAX_K + 1):
            source = ColumnDataSource({"x": [], "residual": [], "q": []})
            chart = figure(height=170, width=220, x_range=[], y_range=(0, 1), tools="", toolbar_location=None,
                           title=f"after {step - 1} rejection{'s' if step != 2 else ''}")
            chart.vbar(x="x", top="residual", width=0.8, color=P_COLOUR, source=source)
            chart.scatter(x="x", y="q", color=Q_COLOUR, size=6, source=source)
            chart.title.text_font_size = "10px"
            chart.xaxis.major_label_orientation = 0.8
            self.residual_sources.append(source)
            self.residual_charts.append(chart)

    def _show_residuals(self, shown: Display) -> None:
        labels = list(shown.state.token_labels)
        chosen = [entry for entry in shown.verifiers if entry.name == self.residual_of.value]
        residuals = chosen[0].residuals if chosen else []
        for step, (source, chart) in enumerate(zip(self.residual_sources, self.residual_charts)):
            chart.visible = step < len(residuals)
            if not chart.visible:
                continue
            chart.x_range.factors = labels
            source.data = {"x": labels, "residual": residuals[step], "q": shown.state.q}
            chart.title.text = (f"after {step} rejection{'' if step == 1 else 's'} "
                                f"(reached {_format(chosen[0].reached[step], 3)})")
        note = "" if residuals else (
            f"{self.residual_of.value}: no residuals shown (not selected, not sequential, or its law is not "
            "enumerated at this size)")
        self.residual_note.object = note

    @staticmethod
    def _curve_figure(source: ColumnDataSource, points: ColumnDataSource, title: str):
        chart = figure(height=240, sizing_mode="stretch_width", title=title, x_axis_label="candidate i",
                       y_range=(0, 1.02), tools="")
        chart.multi_line(xs="xs", ys="ys", color="color", line_width=2, source=source, legend_field="name")
        chart.scatter(x="x", y="y", color="color", size=6, source=points)
        chart.legend.label_text_font_size, chart.legend.spacing, chart.legend.padding = "9px", 0, 2
        chart.add_layout(chart.legend[0], "right")
        chart.xaxis.ticker = FixedTicker(ticks=list(range(1, MAX_K + 1)))
        chart.add_tools(HoverTool(tooltips=[("verifier", "@name")]))
        return chart

    def redraw(self) -> None:
        """Recompute the display of the current state and push it into every figure and table."""
        try:
            state = self.state()
            shown = display(state)
        except ValueError as error:
            self._refuse(str(error))
            return
        with pn.io.unlocked():  # Bokeh models changed from any widget callback, locked or not
            self._push(shown)

    def _push(self, shown: Display) -> None:
        """Write ``shown`` into the figures' data sources, the residual charts and the table."""
        state = shown.state
        labels, size = list(state.token_labels), state.p.size
        self._quiet = True
        offsets = np.arange(size, dtype=np.float64)
        self.pair_source.data = {"x": np.concatenate([offsets - 0.2, offsets + 0.2]),
                                 "top": np.concatenate([state.p, state.q]),
                                 "color": [P_COLOUR] * size + [Q_COLOUR] * size}
        self.handles.data = {"x": np.concatenate([offsets - 0.2, offsets + 0.2]),
                             "y": np.concatenate([state.p, state.q])}
        self._quiet = False
        self.pair_figure.x_range.end = size - 0.5
        self.pair_figure.xaxis.ticker = FixedTicker(ticks=list(range(size)))
        self.pair_figure.xaxis.major_label_overrides = {index: label for index, label in enumerate(labels)}
        self.law_figure.x_range.factors = labels
        self.law_bars.data = {"x": labels, "top": state.p}
        self.law_points.data = _law_points(shown)
        for lines, points, attribute in ((self.drift_source, self.drift_points, "drift"),
                                         (self.tv_source, self.tv_points, "residual_tv")):
            lines.data = _curves(shown.verifiers, attribute)
            points.data = _points(lines.data)
        self._show_residuals(shown)
        self.table.object = numbers_table(shown)

    def _layout(self):
        controls = pn.Column(
            "### Pair", self.preset, self.vocab, self.pair_seed, self.alpha, self.zipf_s, self.temperature, self.top_k,
            self.row, self.p_text, self.q_text, self.note, "### Candidates", pn.pane.Markdown("k"), self.k,
            "### Verifiers", self.verifiers, self.law_limit, "### Live draw", self.seed, self.draw_button, width=320)
        main = pn.Column(
            pn.Row(pn.pane.Bokeh(self.pair_figure, sizing_mode="stretch_width"),
                   pn.pane.Bokeh(self.law_figure, sizing_mode="stretch_width"), sizing_mode="stretch_width"),
            self.table,
            pn.Row(pn.pane.Bokeh(self.drift_figure, sizing_mode="stretch_width"),
                   pn.pane.Bokeh(self.tv_figure, sizing_mode="stretch_width"), sizing_mode="stretch_width"),
            pn.pane.Markdown("#### Residual after i - 1 rejections (bars; dots: q). For rrs and resispec it is the "
                             "residual target r_i; for the others, averaged over the drafts that reach step i."),
            pn.Row(self.residual_of, self.residual_note),
            pn.Row(*[pn.pane.Bokeh(chart) for chart in self.residual_charts]),
            sizing_mode="stretch_width")
        return pn.Row(controls, main, sizing_mode="stretch_width")


def _numbers(text: str, name: str) -> list[float]:
    """Comma- or space-separated numbers; ``ValueError`` naming ``name`` otherwise."""
    parts = [part for part in text.replace(",", " ").split() if part]
    try:
        return [float(part) for part in parts]
    except ValueError:
        raise ValueError(f"{name}: expected comma-separated numbers, got {text!r}") from None

