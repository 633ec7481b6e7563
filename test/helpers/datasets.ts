import { existsSync } from 'node:fs'
import { resolve } from 'node:path'

export const datasetsDir = resolve(import.meta.dirname, '../../../shared/datasets')
export const hasDatasets = existsSync(datasetsDir)
export const datasetsSkip = hasDatasets ? false : `no datasets at ${datasetsDir}`
