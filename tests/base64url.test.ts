/**
 * src/base64url.ts: the one encoding of every opaque token (resume, page, continue). Checked
 * against `node:buffer`'s own `base64url` (an implementation we did not write), on the ASCII fast
 * path and on the UTF-8 path, including the characters base64 and base64url spell differently.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { base64UrlToText, textToBase64Url } from "../src/base64url.ts";

const reference = (text: string) => Buffer.from(text, "utf8").toString("base64url");

test("textToBase64Url: unpadded base64url of the UTF-8 bytes, ASCII and not", () => {
  const cases = [
    "",
    "f",
    "fo",
    "foo",
    "?>>", // base64 "Pz4+": the + becomes -
    "???", // base64 "Pz8/": the / becomes _
    '{"v":1,"p":{"bench":"123456789"}}',
    '{"v":1,"c":"clüster-ü€😀","p":{"a":"1"}}',
    "\u0000\u007f", // the edges of ASCII
    "\u0080\u00ff", // just past it: two bytes each in UTF-8
  ];
  for (const text of cases) {
    const token = textToBase64Url(text);
    assert.equal(token, reference(text), JSON.stringify(text));
    assert.match(token, /^[A-Za-z0-9_-]*$/);
    assert.equal(base64UrlToText(token), text, `round trip of ${JSON.stringify(text)}`);
  }
  assert.equal(textToBase64Url("?>>"), "Pz4-");
  assert.equal(textToBase64Url("???"), "Pz8_");
});

test("base64UrlToText: anything textToBase64Url cannot have made is undefined", () => {
  for (const bad of ["Pz4+", "Pz8/", "Zm8=", "a", "!!!!", /* 0xff: not UTF-8 */ "_w"]) {
    assert.equal(base64UrlToText(bad), undefined, bad);
  }
});
