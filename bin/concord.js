#!/usr/bin/env node
// The `concord` command. The service is TypeScript run through tsx's loader, so the
// installed package needs no build step: `npm ci` then `npx concord serve` works.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../src/cli.ts')
await main(process.argv.slice(2))
