// How the report writes figures: exact decimals grouped by string (never through a float), with
// the raw value beside the text in data-value for anyone reading the page by machine.

import { html, type Markup } from './markup.js'

/** Digits in groups of three (1,234,567.89), by string: the exact decimal is never a float. */
export function groupDigits(value: string): string {
  const m = /^(-?)(\d+)(\.\d+)?$/.exec(value)
  if (!m) return value
  return `${m[1]}${m[2].replace(/\B(?=(\d{3})+(?!\d))/g, ',')}${m[3] ?? ''}`
}

/** A figure: the raw value in data-value, grouped for reading in the text. */
export function figure(name: string, value: string | number | null, empty = '—'): Markup {
  if (value === null) return html`<span data-figure="${name}" data-value="">${empty}</span>`
  return html`<span data-figure="${name}" data-value="${value}">${groupDigits(String(value))}</span>`
}

export const percent = (rate: number) => `${(rate * 100).toFixed(2)} %`
