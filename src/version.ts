/**
 * appwatch's version, as in package.json (`appwatch --version`, the `appwatch_build_info` metric,
 * the Kubernetes user agent); tests/cli-edges.test.ts checks that the two agree.
 * @module
 */

/** The version in package.json. */
export const VERSION = "0.1.0";
