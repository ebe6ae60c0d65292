// call_tools.mjs — the tools the tool_choice tests declare: every string
// bounded, so that a noise model's call ends well inside max_tokens; each
// with a description (gpt-oss's template requires one).
export const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather of a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 12 },
        days: { type: 'integer', minimum: 1, maximum: 7 },
        unit: { enum: ['celsius', 'fahrenheit'] },
        options: { type: 'object', properties: { wind: { type: 'boolean' }, hours: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 23 }, maxItems: 3 } }, required: ['wind'], additionalProperties: false },
      },
      required: ['city', 'days'],
    },
  },
};
export const clock = {
  type: 'function',
  function: { name: 'get_time', description: 'Time in a zone', parameters: { type: 'object', properties: { zone: { type: 'string', minLength: 1, maxLength: 6 }, precise: { type: 'boolean' } }, required: ['zone'], additionalProperties: false } },
};
