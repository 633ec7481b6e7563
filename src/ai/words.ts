// Splitting a request in words into tokens the phrase readers walk through, keeping what they
// need: numbers as their exact text, ISO dates whole, and the original case (USD is a currency
// code, "usd" may be one too).

export interface Token {
  /** As written. */
  text: string
  /** Lower case, for matching phrases. */
  word: string
  kind: 'number' | 'day' | 'word'
}

const TOKEN = /\d{4}-\d{2}-\d{2}|[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|[-+]?\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*|%/g

export function tokens(text: string): Token[] {
  return [...text.matchAll(TOKEN)].map(([raw]) => {
    const kind = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? 'day' : /^[-+]?\d/.test(raw) ? 'number' : 'word'
    const t = kind === 'number' ? raw.replace(/,/g, '').replace(/^\+/, '') : raw
    return { text: t, word: t.toLowerCase(), kind }
  })
}

/** A number's text as a filter value: a JS number when that is exact, else the decimal text. */
export function numberValue(text: string): number | string {
  const n = Number(text)
  return String(n) === text ? n : text
}

/** Common ISO 4217 codes, recognised even in lower case; any other 3 capitals also count. */
export const CURRENCIES: ReadonlySet<string> = new Set([
  'usd',
  'eur',
  'gbp',
  'brl',
  'jpy',
  'chf',
  'cad',
  'aud',
  'cny',
  'inr',
  'mxn',
  'sek',
  'nok',
  'dkk',
  'pln',
  'zar',
])

export function isCurrencyCode(t: Token): boolean {
  return t.kind === 'word' && (CURRENCIES.has(t.word) || /^[A-Z]{3}$/.test(t.text))
}
