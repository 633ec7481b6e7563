// The report's stylesheet, inline in the page: system fonts only (nothing fetched), and a print
// sheet so the browser's "Save as PDF" gives clean pages: each section starts a page, rows and
// charts are not split, colours print as shown, and the on-screen hint is left out.

export const STYLESHEET = `
:root { --ink: #1d2430; --muted: #5b6675; --line: #d8dee6; --matched: #2f7d4f; --ambiguous: #c98a14;
  --unmatched: #b3423a; --bar: #4a6fa5; --zero: #2f7d4f; --panel: #f5f7fa; }
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { margin: 0 auto; max-width: 1080px; padding: 24px 32px 48px; color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 12px; padding-bottom: 6px; border-bottom: 2px solid var(--ink); }
h3 { font-size: 15px; margin: 18px 0 8px; }
section { margin-top: 36px; }
.muted { color: var(--muted); }
.hint { background: var(--panel); border: 1px solid var(--line); padding: 6px 10px; border-radius: 4px;
  font-size: 12px; color: var(--muted); margin-bottom: 16px; }
dl.meta { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 2px 16px; margin: 12px 0; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; }
.tiles { display: flex; gap: 12px; flex-wrap: wrap; margin: 12px 0 16px; }
.tile { flex: 1 1 150px; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
.tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile .big { font-size: 26px; font-weight: 600; font-variant-numeric: tabular-nums; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 14px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: var(--panel); }
td.num, th.num { text-align: right; white-space: nowrap; }
td.key { min-width: 22ch; }
td.key, td.code, .code { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12px;
  overflow-wrap: break-word; }
tr.total td { font-weight: 600; border-top: 2px solid var(--ink); }
.status-done { color: var(--matched); } .status-failed, .status-skipped { color: var(--unmatched); }
svg.share { width: 100%; height: 12px; display: block; margin: 4px 0 10px; }
svg.share .matched { fill: var(--matched); } svg.share .ambiguous { fill: var(--ambiguous); }
svg.share .unmatched { fill: var(--unmatched); }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; color: var(--muted); }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
.legend .matched { background: var(--matched); } .legend .ambiguous { background: var(--ambiguous); }
.legend .unmatched { background: var(--unmatched); }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
figure { margin: 0; break-inside: avoid; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 4px; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart .bar { fill: var(--bar); } svg.chart .bar.zero { fill: var(--zero); }
svg.chart .axis { stroke: var(--ink); stroke-width: 1; }
svg.chart .tick { font-size: 12px; fill: var(--muted); } svg.chart .axis-label { font-size: 13px; fill: var(--ink); }
.empty { color: var(--muted); font-style: italic; }
footer { margin-top: 40px; font-size: 12px; color: var(--muted); }
@media (max-width: 760px) { .charts { grid-template-columns: 1fr; } dl.meta { grid-template-columns: max-content 1fr; } }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  th, td { padding: 3px 5px; } th { font-size: 10px; } td.key, td.code, .code { font-size: 10px; }
  .tile .big { font-size: 20px; }
  .hint { display: none; }
  section { margin-top: 0; break-before: page; }
  section.first { break-before: auto; margin-top: 16px; }
  h2 { break-after: avoid; }
  tr, .tile, figure { break-inside: avoid; }
  thead { display: table-header-group; }
  .charts { grid-template-columns: 1fr 1fr; }
}
`
