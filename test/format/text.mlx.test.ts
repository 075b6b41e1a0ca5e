// formatAudit and MLX: on every bundled snapshot, the MLX table has a row for each value MLX computes (the
// architecture-driven ones among them), stock and patched, then where MLX's architecture name comes from; the
// llama.cpp table is followed by the line on the drafter and the projector.
import { describe, expect, it } from 'vitest';
import { audit } from '../../lib/audit/audit.js';
import { ARCHITECTURE_UNRECORDED } from '../../lib/core/words.js';
import { listSnapshots } from '../../lib/device/snapshots.js';
import { LLAMA_CPP_OTHER_WORKLOADS, MLX_RULES } from '../../lib/engines/index.js';
import { formatAudit } from '../../lib/format/text.js';
import { stylerFor } from '../../lib/format/style.js';

const plain = stylerFor({ isTTY: false }, {}, 'never');

describe('formatAudit with MLX', () => {
  it.each(listSnapshots())('%s: every MLX value, stock and offered, and the architecture line', (snapshot) => {
    const a = audit({ snapshot, env: {}, mlxArchitecture: 'applegpu_g15g' });
    const text = formatAudit(a, plain);
    const mlx = a.devices[0]!.engines.find((e) => e.engine === 'mlx')!;
    if (mlx.before.engine !== 'mlx' || mlx.after.engine !== 'mlx') throw new Error('an MLX comparison');
    const lines = text.split('\n');
    for (const r of MLX_RULES) {
      // The name a report lacks is the report's fact (unrecorded); any other value MLX's rules cannot give is unknown.
      const none = r.flag === 'architectureName' ? ARCHITECTURE_UNRECORDED : 'unknown';
      const before = String(mlx.before.flags[r.flag].value ?? none);
      const after = String(mlx.after.flags[r.flag].value ?? none);
      const row = lines.find((l) => l.trim().startsWith(`${r.flag} `));
      expect(row?.trim().split(/\s{2,}/)).toEqual(
        before === after ? [r.flag, before, after] : [r.flag, before, `${after} *`],
      );
    }
    expect(text).toContain(
      `MLX parses ${mlx.before.flags.architectureName.reason}; offered: ${mlx.after.flags.architectureName.reason}`,
    );
    expect(text).toContain(`  ${LLAMA_CPP_OTHER_WORKLOADS}`);
  });
});
