// The report's sections drawn from the result files' figures and from exception aging: unmatched
// records by reason, the matches' deltas, the largest unmatched records, exceptions by age.

import type { RunSummary } from '../../engine/reconcile.js'
import type { ReportFigures } from './figures.js'
import type { Histogram } from './histogram.js'
import { figure, groupDigits } from './format.js'
import { html, type Markup } from './markup.js'
import type { RunReport } from './report.js'
import { histogramSvg } from './svg.js'
import type { ReasonClass, UnmatchedFigures } from './unmatched.js'

const REASONS: Record<ReasonClass, string> = {
  no_candidate: 'no counterpart: no record on the other side shares its join in any pass',
  failed_conjunct: 'its closest candidate failed a condition',
  outscored: 'its candidate satisfied the pass but went to a better-scored record, or tied',
  no_group: 'no group sums to its amount within tolerance',
  tied: "a tie resolved by the pass's prefer in favour of another record",
}

const SIDES = ['left', 'right'] as const

/** What a section says when the run stored no records to read. */
const noRecords = html`<p class="empty">A dry run keeps only its summary: no records were stored to read this from.</p>`

function reasonTable(side: 'left' | 'right', u: UnmatchedFigures, s: RunSummary): Markup {
  const expected = s[side]
  const adds = u.records === expected.unmatched && u.amount === expected.unmatched_amount
  if (u.records === 0) return html`<p class="empty" data-reasons="${side}">No unmatched ${side} records.</p>`
  return html`<table data-reasons="${side}">
      <thead>
        <tr>
          <th>Why unmatched</th>
          <th>Pass</th>
          <th>Condition failed</th>
          <th class="num">Records</th>
          <th class="num">Amount</th>
          <th class="num">Candidate matched elsewhere</th>
        </tr>
      </thead>
      <tbody>
        ${u.by_reason.map(
          (r) =>
            html`<tr data-reason="${r.reason}" data-pass="${r.pass ?? ''}" data-conjunct="${r.conjunct ?? ''}">
              <td>${REASONS[r.reason]}</td>
              <td class="code">${r.pass ?? 'any'}</td>
              <td class="code">${r.conjunct ?? ''}</td>
              <td class="num">${figure('records', r.records)}</td>
              <td class="num">${figure('amount', r.amount)}</td>
              <td class="num">${figure('candidate_taken', r.candidate_taken)}</td>
            </tr>`,
        )}
        <tr class="total" data-total="${side}">
          <td colspan="3">Total</td>
          <td class="num">${figure('records', u.records)}</td>
          <td class="num">${figure('amount', u.amount)}</td>
          <td></td>
        </tr>
      </tbody>
    </table>
    ${adds ? '' : html`<p class="empty">These do not add up to the summary's ${expected.unmatched} unmatched records (${expected.unmatched_amount ?? 'no amount'}).</p>`}`
}

export function reasonsSection(figures: ReportFigures | null, s: RunSummary): Markup {
  return html`<section id="reasons">
    <h2>Unmatched by reason</h2>
    <p class="muted">
      Each unmatched record's nearest miss: the pass and the condition that rejected its closest candidate.
    </p>
    ${
      figures
        ? SIDES.map(
            (side) =>
              html`<h3>${side === 'left' ? 'Left' : 'Right'} side</h3>
                ${reasonTable(side, figures.unmatched[side], s)}`,
          )
        : noRecords
    }
  </section>`
}

function deltaFigure(name: string, h: Histogram, label: string, axis: string, unit: string): Markup {
  const body = h.counted
    ? histogramSvg(h, label, axis, unit)
    : html`<p class="empty">
        No match has ${name === 'amount' ? 'an amount' : 'a date'} delta: no pass compares
        ${name === 'amount' ? 'amounts' : 'dates'}.
      </p>`
  return html`<figure
    data-histogram="${name}"
    data-counted="${h.counted}"
    data-missing="${h.missing}"
    data-zero="${h.zero}"
    data-min="${h.min ?? ''}"
    data-max="${h.max ?? ''}"
  >
    <h3>${label}</h3>
    ${body}
    <figcaption>
      ${groupDigits(String(h.counted))} matches with a value, ${groupDigits(String(h.zero))} of them exactly
      0${h.missing ? `, ${groupDigits(String(h.missing))} without one` : ''}${h.min !== null ? `; from ${h.min} to ${h.max}${unit}` : ''}.
    </figcaption>
  </figure>`
}

export function deltasSection(figures: ReportFigures | null): Markup {
  return html`<section id="deltas">
    <h2>Match deltas</h2>
    <p class="muted">
      How far matched records are apart: left amount minus right amount, right date minus left date. Bins computed by
      the server; the bin holding 0 is green.
    </p>
    ${figures ? html`<div class="charts">${deltaFigure('amount', figures.deltas.amount, 'Amount delta', 'left amount − right amount', '')}${deltaFigure('days', figures.deltas.days, 'Date delta', 'right date − left date, days', ' days')}</div>` : noRecords}
  </section>`
}

function topTable(side: 'left' | 'right', figures: ReportFigures): Markup {
  const u = figures.unmatched[side]
  if (u.top === null)
    return html`<p class="empty" data-top="${side}" data-no-amount="true">
      The ${side} side has no amount column the recipe compares: its unmatched records cannot be ranked by amount.
    </p>`
  if (!u.top.length) return html`<p class="empty" data-top="${side}">No unmatched ${side} records.</p>`
  return html`<table data-top="${side}" data-amount-column="${figures.amount_columns[side] ?? ''}">
    <thead>
      <tr>
        <th>#</th>
        <th>Record</th>
        <th class="num">Amount (<span class="code">${figures.amount_columns[side] ?? ''}</span>)</th>
        <th>Why unmatched</th>
      </tr>
    </thead>
    <tbody>
      ${u.top.map(
        (r, k) =>
          html`<tr data-key="${r.record_key}" data-reason="${r.reason}">
            <td class="num">${k + 1}</td>
            <td class="key">${r.record_key}</td>
            <td class="num">${figure('amount', r.amount)}</td>
            <td>${r.why}</td>
          </tr>`,
      )}
    </tbody>
  </table>`
}

export function topSection(figures: ReportFigures | null): Markup {
  return html`<section id="top-unmatched">
    <h2>Top unmatched by amount</h2>
    <p class="muted">
      The unmatched records with the largest amounts (by absolute value) on each side: where the money at risk is.
    </p>
    ${
      figures
        ? SIDES.map(
            (side) =>
              html`<h3>${side === 'left' ? 'Left' : 'Right'} side</h3>
                ${topTable(side, figures)}`,
          )
        : noRecords
    }
  </section>`
}

export function agingSection(report: RunReport): Markup {
  const { aging, aging_error } = report
  const body = aging_error
    ? html`<p class="empty" data-aging="error">Exception aging could not be read: ${aging_error}</p>`
    : !aging?.length
      ? html`<p class="empty" data-aging="none">No open exceptions for this run.</p>`
      : html`<table data-aging="buckets">
          <thead>
            <tr>
              <th>Age</th>
              <th class="num">Exceptions</th>
              <th class="num">Amount at risk</th>
            </tr>
          </thead>
          <tbody>
            ${aging.map(
              (b) =>
                html`<tr data-bucket="${b.bucket}">
                  <td>${b.bucket}</td>
                  <td class="num">${figure('count', b.count)}</td>
                  <td class="num">${figure('amount', b.amount)}</td>
                </tr>`,
            )}
          </tbody>
        </table>`
  return html`<section id="aging">
    <h2>Exceptions by age</h2>
    ${body}
  </section>`
}
