#!/usr/bin/env node
/**
 * The npm package's `appwatch` command (`bin` in package.json): the built `main.ts`, run by plain
 * Node (no tsx; the package ships JavaScript). From a clone, `npm start` runs `main.ts` itself.
 * @module
 */
import "./main.ts";
