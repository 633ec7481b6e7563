// Two two-row CSV files and a one-pass recipe matching them: for tests about the service around
// a run (access, idempotency, operations), not about matching.

export const tinyFiles = {
  'bank.csv': 'txn_id,ref,amount\nT1,R1,10.00\nT2,R2,20.00\n',
  'inv.csv': 'id,ref,total\nI1,R1,10.00\nI2,R2,20.00\n',
}

export const tinyRecipe = {
  name: 'r',
  left: { source: 'bank', key: ['txn_id'] },
  right: { source: 'inv', key: ['id'] },
  passes: [{ name: 'p', pattern: '1:1', when: 'l.ref = r.ref AND l.amount = r.total' }],
}
