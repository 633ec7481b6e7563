// Comparisons per second of the text measures probabilistic passes use, on real memo pairs:
// `node --import tsx bench/text-compare.ts [PAIRS]`. Reads the memos of ../shared/datasets/transfers
// when it is there, else of bench/data's generated transfers (bench/gen-unkeyed.ts).

import { existsSync, readFileSync } from 'node:fs'
import { TEXT_MEASURES } from '../src/engine/match/text/measures.js'
import { TextMeasures } from '../src/engine/match/text/measures.js'
import { prepareText, Vocabulary } from '../src/engine/match/text/prepared.js'
import { prng } from './gen-data.js'

const shared = new URL('../../shared/datasets/transfers/', import.meta.url).pathname
const generated = new URL('./data/unkeyed-10000/', import.meta.url).pathname
const dir = existsSync(shared) ? shared : generated
if (!existsSync(dir)) throw new Error(`no memos: neither ${shared} nor ${generated} (run bench/gen-unkeyed.ts)`)
const memos = (file: string) =>
  readFileSync(dir + file, 'utf8')
    .trim()
    .split(/\r?\n/)
    .slice(1)
    .map((line) => line.slice(line.lastIndexOf(',') + 1))
const left = memos('sent.csv')
const right = memos('received.csv')
const pairs = Number(process.argv[2] ?? 2_000_000)

const vocabulary = new Vocabulary()
const trigrams = new Map<number | string, number>()
const t0 = performance.now()
const l = prepareText(left, vocabulary, { trigrams })
const r = prepareText(right, vocabulary, { trigrams })
const m = new TextMeasures(l, r, vocabulary, true)
console.log(`prepared ${left.length + right.length} memos in ${(performance.now() - t0).toFixed(0)} ms (${dir})`)

const rand = prng(7)
const is = Int32Array.from({ length: pairs }, () => Math.floor(rand() * left.length))
const js = Int32Array.from({ length: pairs }, () => Math.floor(rand() * right.length))
for (const measure of TEXT_MEASURES) {
  let sink = 0
  for (let k = 0; k < 100_000; k++) sink += m.measure(measure, is[k], js[k]) || 0 // warm up
  const start = performance.now()
  for (let k = 0; k < pairs; k++) sink += m.measure(measure, is[k], js[k]) || 0
  const ms = performance.now() - start
  console.log(
    `${measure.padEnd(14)} ${(pairs / ms / 1000).toFixed(2).padStart(7)} M comparisons/s  (${sink > 0 ? 'ok' : '-'})`,
  )
}
