// The run report as one self-contained HTML page: inline stylesheet, inline SVG charts, no script,
// nothing fetched (the route's Content-Security-Policy holds the page to that). Figures carry
// stable data-figure / data-value attributes (the raw value: amounts as the summary's exact
// strings) so a test, or a scraper, reads what the page shows without parsing its formatting.

import type { RunSummary } from '../../engine/reconcile.js'
import { figure, percent } from './format.js'
import { html, type Markup, trusted } from './markup.js'
import type { RunReport } from './report.js'
import { agingSection, deltasSection, reasonsSection, topSection } from './sections.js'
import { shareBar } from './svg.js'
import { STYLESHEET } from './style.js'

function seconds(from: string | null, to: string | null): string {
  if (!from || !to) return '—'
  return `${((Date.parse(to) - Date.parse(from)) / 1000).toFixed(1)} s`
}

function header(report: RunReport): Markup {
  const { run } = report
  const s = run.summary
  const version = run.recipe_version ?? s?.recipe_version
  const params = Object.entries(run.params)
  return html`<header>
    <h1>
      Run report:
      <span data-figure="recipe" data-value="${run.recipe_name}">${run.recipe_name}</span
      >${version === null || version === undefined ? '' : html` <span class="muted">v<span data-figure="recipe-version" data-value="${version}">${version}</span></span>`}
    </h1>
    <div class="muted">
      Run <span class="code" data-figure="run-id" data-value="${run.id}">${run.id}</span> · ${run.status} · ${run.mode}
      · engine ${run.engine}${run.dry_run ? ' · dry run' : ''}
    </div>
    <dl class="meta">
      <dt>Created</dt>
      <dd data-figure="created-at" data-value="${run.created_at}">${run.created_at}</dd>
      <dt>Started</dt>
      <dd data-figure="started-at" data-value="${run.started_at ?? ''}">${run.started_at ?? '—'}</dd>
      <dt>Finished</dt>
      <dd data-figure="finished-at" data-value="${run.finished_at ?? ''}">${run.finished_at ?? '—'}</dd>
      <dt>Took</dt>
      <dd>
        ${seconds(run.started_at, run.finished_at)}${s ? html` <span class="muted">(matching ${s.timings.total_ms} ms)</span>` : ''}
      </dd>
      ${
        params.length
          ? html`<dt>Parameters</dt>
              <dd>
                ${params.map(([k, v], n) => html`${n ? ', ' : ''}<span class="code">${k}</span> = ${String(v)}`)}
              </dd>`
          : ''
      }
    </dl>
  </header>`
}

function sideRow(side: 'left' | 'right', s: RunSummary, column: string | null | undefined): Markup {
  const x = s[side]
  return html`<tr data-side="${side}">
    <td>${side}${column ? html` <span class="muted">(amount: <span class="code">${column}</span>)</span>` : ''}</td>
    <td class="num">${figure('rows', x.rows)}</td>
    <td class="num">${figure('matched', x.matched)}</td>
    <td class="num">${figure('ambiguous', x.ambiguous)}</td>
    <td class="num">${figure('unmatched', x.unmatched)}</td>
    <td class="num">${figure('amount', x.amount)}</td>
    <td class="num">${figure('matched_amount', x.matched_amount)}</td>
    <td class="num">${figure('unmatched_amount', x.unmatched_amount)}</td>
  </tr>`
}

function overview(report: RunReport, s: RunSummary): Markup {
  const columns = report.figures?.amount_columns
  const shares = (side: 'left' | 'right') =>
    shareBar([
      { label: 'matched', value: s[side].matched - s[side].ambiguous, css: 'matched' },
      { label: 'ambiguous', value: s[side].ambiguous, css: 'ambiguous' },
      { label: 'unmatched', value: s[side].unmatched, css: 'unmatched' },
    ])
  const noAmount = s.left.amount === null && s.right.amount === null
  return html`<section class="first" id="summary">
    <h2>Summary</h2>
    <div class="tiles">
      <div class="tile">
        <div class="label">Match rate</div>
        <div class="big">
          <span data-figure="match-rate" data-value="${s.match_rate}">${percent(s.match_rate)}</span>
        </div>
      </div>
      <div class="tile">
        <div class="label">Matches</div>
        <div class="big">${figure('run-matches', s.matches)}</div>
      </div>
      <div class="tile">
        <div class="label">Held as ambiguous</div>
        <div class="big">${figure('run-ambiguous', s.ambiguous)}</div>
      </div>
      <div class="tile">
        <div class="label">Unmatched records</div>
        <div class="big">${figure('run-unmatched', s.left.unmatched + s.right.unmatched)}</div>
      </div>
    </div>
    <table data-table="sides">
      <thead>
        <tr>
          <th>Side</th>
          <th class="num">Records</th>
          <th class="num">Matched</th>
          <th class="num">of which ambiguous</th>
          <th class="num">Unmatched</th>
          <th class="num">Amount</th>
          <th class="num">Matched amount</th>
          <th class="num">Unmatched amount</th>
        </tr>
      </thead>
      <tbody>
        ${sideRow('left', s, columns?.left)}${sideRow('right', s, columns?.right)}
      </tbody>
    </table>
    ${noAmount ? html`<p class="empty">Neither side has an amount column the recipe compares: amounts are not reported.</p>` : ''}
    <div class="legend">
      <span><i class="matched"></i>matched</span><span><i class="ambiguous"></i>ambiguous</span
      ><span><i class="unmatched"></i>unmatched</span>
    </div>
    <div class="muted">left</div>
    ${shares('left')}
    <div class="muted">right</div>
    ${shares('right')}
    <h3>Per pass</h3>
    <table data-table="passes">
      <thead>
        <tr>
          <th>Pass</th>
          <th>Pattern</th>
          <th>Status</th>
          <th class="num">Matches</th>
          <th class="num">Ambiguous</th>
          <th class="num">Left records</th>
          <th class="num">Left amount</th>
          <th class="num">Right records</th>
          <th class="num">Right amount</th>
          <th class="num">ms</th>
        </tr>
      </thead>
      <tbody>
        ${s.passes.map(
          (p) =>
            html`<tr data-pass="${p.name}">
              <td class="code">
                ${p.name}${p.blocked_by?.length ? html` <span class="muted">(blocked by ${p.blocked_by.join(', ')})</span>` : ''}
              </td>
              <td>${p.pattern}</td>
              <td class="status-${p.status}" data-figure="status" data-value="${p.status}">${p.status}</td>
              <td class="num">${figure('matches', p.matches)}</td>
              <td class="num">${figure('ambiguous', p.ambiguous)}</td>
              <td class="num">${figure('left_matched', p.left_matched)}</td>
              <td class="num">${figure('left_amount', p.left_amount)}</td>
              <td class="num">${figure('right_matched', p.right_matched)}</td>
              <td class="num">${figure('right_amount', p.right_amount)}</td>
              <td class="num">${p.ms}</td>
            </tr>`,
        )}
      </tbody>
    </table>
  </section>`
}

/** The report page. */
export function renderReport(report: RunReport): string {
  const { run, figures } = report
  const s = run.summary
  const body = s
    ? html`${overview(report, s)}${reasonsSection(figures, s)}${deltasSection(figures)}${topSection(figures)}${agingSection(report)}`
    : html`<p class="empty">This run has no summary.</p>`
  return `<!doctype html>${html`<html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>Run report: ${run.recipe_name} (${run.id})</title>
      <style>
        ${trusted(STYLESHEET)}
      </style>
    </head>
    <body data-run="${run.id}">
      <div class="hint">Print this page (Ctrl+P / ⌘P, "Save as PDF") for a PDF: each section starts a page.</div>
      ${header(report)} ${body}
      <footer>
        Generated by Concord at
        <span data-figure="generated-at" data-value="${report.generated_at}">${report.generated_at}</span
        >${figures ? ` from the run's stored results in ${figures.ms} ms` : ''}.
      </footer>
    </body>
  </html>`}`
}
