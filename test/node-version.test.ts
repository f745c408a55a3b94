// The Node the suite runs on: .ci/run sets CBP_EXPECT_NODE for its smoke runs on other versions (scripts/node-install.mjs),
// so a run that silently fell back to the default Node fails here instead of passing as a test of Node 22 or 24.
import { describe, expect, it } from 'vitest';

describe('the Node running the suite', () => {
  it('is the one CI asked for (CBP_EXPECT_NODE), and at least the floor package.json names', () => {
    const want = process.env.CBP_EXPECT_NODE;
    if (want) expect(process.versions.node.split('.')[0]).toBe(want);
    const [major, minor] = process.versions.node.split('.').map(Number);
    expect(major! > 20 || (major === 20 && minor! >= 19)).toBe(true);
  });
});
