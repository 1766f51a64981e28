/**
 * The settings of appwatch, in one folder: the table that declares every setting (`table.ts`),
 * their valibot schemas (`schemas.ts`), the environment (`env.ts`), config-file (`file.ts`) and
 * flag (`flags.ts`) layers, the layering itself (`load.ts`: defaults < file < environment <
 * flags) and `--help` (`help.ts`). The rest of appwatch imports this module.
 *
 * The exception is code the Cloudflare Worker bundles (`src/service/compose.ts`,
 * `src/worker/cloudflare-env.ts`): it imports `table.ts` and `env.ts` directly, since this module
 * reaches `node:fs` and `node:util` through `file.ts` and `flags.ts`
 * (tests/no-node-builtins.test.ts).
 * @module
 */
export {
  type AppwatchSettings,
  type Command,
  CONFIG_ENV,
  DEFAULT_URL,
  FALLBACK_NAMESPACE,
  type FileKey,
  type InputKeyOf,
  type KeyOf,
  RULES,
  rowsOf,
  SECTIONS,
  type ServiceSettings,
  type SettingDef,
  type SettingKey,
  type SettingRule,
  SETTINGS,
  type SettingsOf,
  type SettingType,
  workerRows,
  type WorkerSettings,
} from "./table.ts";
export { check, describe, type Layer, type Problems, settingsSchema, type StringKind, stringKind, Token, valueSchema } from "./schemas.ts";
export { fromString, readEnvLayer, settingsFromEnv, splitList, workerSettingsFromEnv } from "./env.ts";
export { parseTokenLines, type ReadFile } from "./file.ts";
export {
  ConfigError,
  DEFAULT_SETTINGS,
  describeSettings,
  type Loaded,
  type LoadedSettings,
  loadCommand,
  loadSettings,
  type LoadSettingsOptions,
  type SettingSource,
} from "./load.ts";
export { EVENTS_HELP, OPTIONS, type OptionSpec, optionsHelp, SERVE_HELP, WATCH_HELP } from "./help.ts";
