// Inline SVG charts for the run report: drawn from figures the server computed, no script, no
// library, nothing fetched; they print as vectors. Every label goes through `html` (escaped).

import type { Histogram } from './histogram.js'
import { html, type Markup } from './markup.js'

const W = 520
const H = 240
const PAD = { left: 52, right: 12, top: 12, bottom: 48 }

const fmt = (n: number) => n.toLocaleString('en-US')

/** A histogram's bars, with the count axis, a few bin labels, and the bin holding 0 marked. */
/** `label` names the chart, `axis` its horizontal axis, `unit` follows a bin's range in its tooltip. */
export function histogramSvg(h: Histogram, label: string, axis: string, unit: string): Markup {
  const n = h.bins.length
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const most = Math.max(1, ...h.bins.map((b) => b.count))
  const barW = plotW / Math.max(1, n)
  const every = Math.max(1, Math.ceil(n / 6))
  const holdsZero = (b: Histogram['bins'][number], k: number) => {
    const from = Number(b.from)
    const to = Number(b.to)
    return h.discrete ? from <= 0 && 0 <= to : from <= 0 && (0 < to || k === n - 1)
  }
  const bars = h.bins.map((b, k) => {
    const x = PAD.left + k * barW
    const bh = b.count === 0 ? 0 : Math.max(1, (b.count / most) * plotH)
    const range = h.discrete && b.from === b.to ? b.from : `${b.from} … ${b.to}`
    return html`<rect
      class="${holdsZero(b, k) ? 'bar zero' : 'bar'}"
      x="${x.toFixed(1)}"
      y="${(PAD.top + plotH - bh).toFixed(1)}"
      width="${Math.max(0.5, barW - 1).toFixed(1)}"
      height="${bh.toFixed(1)}"
      data-from="${b.from}"
      data-to="${b.to}"
      data-count="${b.count}"
      ><title>${range}${unit}: ${fmt(b.count)}</title></rect
    >`
  })
  const ticks = h.bins.flatMap((b, k) =>
    k % every === 0 || k === n - 1
      ? [
          html`<text
            class="tick"
            x="${(PAD.left + k * barW + barW / 2).toFixed(1)}"
            y="${H - PAD.bottom + 18}"
            text-anchor="middle"
            >${b.from}</text
          >`,
        ]
      : [],
  )
  return html`<svg
    class="chart"
    viewBox="0 0 ${W} ${H}"
    role="img"
    aria-label="${label}"
    xmlns="http://www.w3.org/2000/svg"
  >
    <line class="axis" x1="${PAD.left}" y1="${PAD.top + plotH}" x2="${W - PAD.right}" y2="${PAD.top + plotH}" />
    <line class="axis" x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${PAD.top + plotH}" />
    <text class="tick" x="${PAD.left - 6}" y="${PAD.top + 12}" text-anchor="end">${fmt(most)}</text>
    <text class="tick" x="${PAD.left - 6}" y="${PAD.top + plotH}" text-anchor="end">0</text>
    ${bars}${ticks}
    <text class="axis-label" x="${PAD.left + plotW / 2}" y="${H - 6}" text-anchor="middle">${axis}</text>
  </svg>`
}

/** A horizontal bar split into parts (matched, ambiguous, unmatched), each a share of the total. */
export function shareBar(parts: { label: string; value: number; css: string }[]): Markup {
  const total = parts.reduce((a, p) => a + p.value, 0)
  let x = 0
  const rects = parts.map((p) => {
    const w = total === 0 ? 0 : (p.value / total) * 100
    const rect = html`<rect class="${p.css}" x="${x.toFixed(3)}" y="0" width="${w.toFixed(3)}" height="10"
      ><title>${p.label}: ${fmt(p.value)}</title></rect
    >`
    x += w
    return rect
  })
  return html`<svg
    class="share"
    viewBox="0 0 100 10"
    preserveAspectRatio="none"
    role="img"
    aria-label="${parts.map((p) => `${p.label} ${p.value}`).join(', ')}"
    xmlns="http://www.w3.org/2000/svg"
  >
    ${rects}
  </svg>`
}
