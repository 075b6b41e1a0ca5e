// The same narrowing through the CommonJS declarations (dist/index.d.cts).
import shim = require('metal-cap-shim');
import tables = require('metal-cap-shim/tables');

const r = shim.applyProfile('apple7');
const verified: boolean = r.applied ? r.verification.ok : r.reason === 'refused-bare-metal';
const report = shim.probe();
const model = report.supported ? report.host.model : report.reason;
try {
  shim.resolveProfile('{');
} catch (err) {
  // @ts-expect-error not a code this package throws
  if (err instanceof shim.MetalCapShimError && err.code === 'ERR_PROFILE_BROKEN') console.log('never');
}
const family: number | null = tables.chipFamily('Apple M1');
console.log(JSON.stringify({ verified, model, family }));
