#!/usr/bin/env node
// The independent validator for tests/json_schema_test.cpp: reads JSON
// lines {"schema": S, "output": "text"} on stdin and prints one line each:
// "valid", "invalid <ajv errors>" or "unparsable <JSON.parse error>".
// Ajv's draft 2020-12 build (prefixItems, $defs) with ajv-formats (date,
// time, date-time, uuid), pinned by package-lock.json (scripts/setup.sh).
'use strict';
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');
const readline = require('readline');

const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  const { schema, output } = JSON.parse(line);
  let value;
  try {
    value = JSON.parse(output);
  } catch (e) {
    console.log('unparsable ' + e.message);
    return;
  }
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  console.log(validate(value) ? 'valid' : 'invalid ' + JSON.stringify(validate.errors));
});
