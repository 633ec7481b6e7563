// HTML built only through a tagged template that escapes every interpolated value: record keys,
// pass names, conjuncts and amounts come from users' data, and a value can reach the page only as
// text. Markup nests by passing one template's result into another; nothing else is trusted.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text safe inside an element or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c])
}

/** Markup made by `html`: inserted as it is into another template. */
export class Markup {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text
  }
}

type Value = Markup | string | number | boolean | null | undefined | readonly Value[]

function insert(value: Value): string {
  if (value instanceof Markup) return value.text
  if (Array.isArray(value)) return value.map(insert).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

/** html`<td>${text}</td>`: strings, numbers and arrays are escaped; Markup nests as is. */
export function html(strings: TemplateStringsArray, ...values: Value[]): Markup {
  let out = strings[0]
  for (let k = 0; k < values.length; k++) out += insert(values[k]) + strings[k + 1]
  return new Markup(out)
}

/** Markup written by this module's authors (a stylesheet), never from data. */
export const trusted = (text: string): Markup => new Markup(text)
