// Stacked bar charts on uPlot (served by the app as /assets/uplot.js, a global `uPlot`). Each
// chart sizes itself to its container, so it fits a phone; the numbers behind every chart are
// also in a table beside it, which is what a screen reader reads.

const HEIGHT = 220;

/** Series colours: readable on white, told apart without relying on red/green alone. */
export const COLORS = {
  events: "#1f4e79",
  blobs: "#8a5a00",
  vfs: "#2e8b57",
  fts: "#7b4fa0",
  other: "#9aa4b2",
  ok: "#1d6b3a",
  error: "#b3261e",
  skipped: "#c9a227",
  pending: "#1f4e79",
  sending: "#4f8fc9",
  unknown: "#c9a227",
  deadLetters: "#b3261e",
};

/**
 * Cumulative sums so that bars drawn from the tallest down look stacked: uPlot draws series in
 * order, each from zero, so the last (smallest) stays visible on top of the others.
 */
function stacked(series) {
  const running = series[0]?.values.map(() => 0) ?? [];
  const sums = series.map((s) => s.values.map((v, i) => (running[i] += v ?? 0)));
  return sums.reverse();
}

/** Tick steps of 1, 2 and 5 times a power of `base`: whole runs, or round kilobytes. */
function steps(base) {
  const out = [];
  for (let power = 1; power < 1e15; power *= base) {
    for (const m of [1, 2, 5, 10, 20, 50, 100, 200, 500]) out.push(m * power);
  }
  return [...new Set(out)].sort((a, b) => a - b);
}

const COUNT_STEPS = steps(1000);
const BYTE_STEPS = steps(1024);

function widthOf(container) {
  return Math.max(200, Math.floor(container.clientWidth || 600));
}

/**
 * A stacked bar chart in `container`: `x` is either category labels (`labels`) or UTC day starts
 * in ms (`days`); `series` are `{ label, color, values }`, bottom first. Returns `{ destroy }`.
 */
export function stackedBars(container, { labels, days, series, bytes = false, yFormat = String }) {
  const { uPlot } = window;
  const time = days !== undefined;
  const count = time ? days.length : labels.length;
  const xs = time ? days.map((ms) => ms / 1000) : labels.map((_, i) => i);
  const half = time ? 43_200 : 0.5;
  const bars = uPlot.paths.bars({ size: [0.7, 64] });
  const drawn = [...series].reverse();
  const options = {
    width: widthOf(container),
    height: HEIGHT,
    legend: { live: false },
    cursor: { show: false },
    scales: {
      x: { time, range: () => [xs[0] - half, xs[count - 1] + half] },
      y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
    },
    axes: [
      time
        ? { space: 60 }
        : { splits: () => xs, values: (_u, splits) => splits.map((i) => labels[i] ?? "") },
      {
        values: (_u, ticks) => ticks.map(yFormat),
        size: 84,
        incrs: bytes ? BYTE_STEPS : COUNT_STEPS,
      },
    ],
    series: [
      {},
      ...drawn.map((s) => ({
        label: s.label,
        fill: s.color,
        stroke: s.color,
        width: 0,
        paths: bars,
        points: { show: false },
      })),
    ],
  };
  const chart = new uPlot(options, [xs, ...stacked(series)], container);
  const resize = () => chart.setSize({ width: widthOf(container), height: HEIGHT });
  window.addEventListener("resize", resize);
  return {
    destroy() {
      window.removeEventListener("resize", resize);
      chart.destroy();
    },
  };
}
