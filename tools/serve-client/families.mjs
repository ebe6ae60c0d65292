// families.mjs — kimi-mini dressed as another family, for the server tests
// of what depends on a family's chat format only (tool calls): the same
// weights and tokenizer ranks, with the family's markers as the special
// tokens (kimi-mini's reserved slots, renamed) and the family's real chat
// template from ../shared/data/chat-templates. The reply format is chosen
// from those specials, as for the real release.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { kimiMini, repo } from './server.mjs';

const templates = path.resolve(repo, '..', 'shared', 'data', 'chat-templates');

// Each family: its template, its markers (the specials its template and
// reply format use), and its BOS/EOS texts (chat_tokens.json).
export const families = {
  qwen3: {
    template: 'Qwen-Qwen3-0.6B',
    markers: ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<think>', '</think>', '<tool_call>', '</tool_call>', '<tool_response>', '</tool_response>'],
    eos: '<|im_end|>',
  },
  deepseek: {
    template: 'deepseek-ai-DeepSeek-V3.1',
    markers: ['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', '<think>', '</think>', '<｜tool▁calls▁begin｜>',
      '<｜tool▁calls▁end｜>', '<｜tool▁call▁begin｜>', '<｜tool▁call▁end｜>', '<｜tool▁sep｜>', '<｜tool▁output▁begin｜>', '<｜tool▁output▁end｜>',
      '<｜tool▁outputs▁begin｜>', '<｜tool▁outputs▁end｜>'],
    bos: '<｜begin▁of▁sentence｜>',
    eos: '<｜end▁of▁sentence｜>',
  },
  glm: {
    template: 'GLM-4.6',
    markers: ['[gMASK]', '<sop>', '<|system|>', '<|user|>', '<|assistant|>', '<|observation|>', '<tool_call>', '</tool_call>', '<arg_key>',
      '</arg_key>', '<arg_value>', '</arg_value>', '<think>', '</think>', '<|endoftext|>', '<tool_response>', '</tool_response>'],
    eos: '<|endoftext|>',
  },
  'gpt-oss': {
    template: 'openai-gpt-oss-120b',
    markers: ['<|start|>', '<|end|>', '<|message|>', '<|channel|>', '<|constrain|>', '<|return|>', '<|call|>', '<|startoftext|>', '<|endoftext|>'],
    bos: '<|startoftext|>',
    eos: '<|return|>',
  },
  // kimi-mini's own specials are Kimi K2's: only the template changes.
  'kimi-k2': { template: 'moonshotai-Kimi-K2', markers: null },
};

// Writes the family's container under a fresh temporary folder; returns
// { dir, ids } (ids: marker text -> its id).
export function familyContainer(name) {
  const family = families[name];
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), `waste-${name}-`)), `${name}.waste`);
  cpSync(kimiMini, dir, { recursive: true });
  const specials = JSON.parse(readFileSync(path.join(dir, 'specials.json'), 'utf8'));
  if (family.markers) {
    const kept = new Set(['[BOS]', '[EOS]', '[UNK]', '[PAD]']);
    const free = specials.filter((s) => !kept.has(s.text));
    if (free.length < family.markers.length) throw new Error(`kimi-mini has ${free.length} free specials, ${name} needs ${family.markers.length}`);
    free.forEach((s, i) => { s.text = i < family.markers.length ? family.markers[i] : `<|reserved_token_${s.id}|>`; });
    writeFileSync(path.join(dir, 'specials.json'), JSON.stringify(specials, null, 1));
    writeFileSync(path.join(dir, 'chat_tokens.json'), JSON.stringify({ ...(family.bos ? { bos_token: family.bos } : {}), eos_token: family.eos }));
  }
  cpSync(path.join(templates, `${family.template}.jinja`), path.join(dir, 'chat_template.jinja'));
  return { dir, ids: Object.fromEntries(specials.map((s) => [s.text, s.id])) };
}
