// jinja_features_test.cpp — the template engine's Jinja features, each a
// small template and context rendered by WASTE's engine and by Jinja2
// (tools/jinja-reference/render.py, one process for the whole table):
// filters, tests, loops, macros, whitespace control, slicing, string
// methods, number and value printing, scoping, and errors (both must fail;
// raise_exception with the same message). Then errors that name their line,
// and hostile templates: each must fail cleanly within its bounds.
#include <chrono>
#include <cstdio>
#include <iterator>
#include <random>

#include <gtest/gtest.h>

#include "jinja_reference.h"
#include "template/template.h"
#include "test_support.h"

namespace {

namespace tmpl = waste::tmpl;
using waste_test::JinjaJob;

struct Feature {
    const char* name;
    const char* source;
    const char* context;  // JSON
};

// clang-format off
const Feature features[] = {
    // whitespace control
    {"trim_blocks", "{% if true %}\nyes\n{% endif %}\nafter", "{}"},
    {"lstrip_blocks", "line\n    {% if true %}\n    body\n    {% endif %}\nend", "{}"},
    {"lstrip_plus", "a\n    {%+ if true %}b{% endif %}", "{}"},
    {"minus_both_sides", "a   \n  {%- if true -%}  \n  b  \n  {%- endif -%}\n  c", "{}"},
    {"variable_minus", "x  {{- 'y' -}}  z\n{{ 'w' }}\n", "{}"},
    {"variable_not_lstripped", "a\n    {{ 'b' }}\n", "{}"},
    {"comment_trim", "a\n  {# note #}\nb\n{#- strip -#}\n  c", "{}"},
    {"trailing_newline_dropped", "text\n", "{}"},
    {"two_trailing_newlines", "text\n\n", "{}"},
    {"crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", "{}"},
    {"block_plus_end", "{% if true +%}\nx{% endif %}", "{}"},
    {"unicode_space_minus", "a\u3000\u00a0{{- 'b' }}", "{}"},
    {"braces_in_strings_and_text", "{ x } {{ '}}' }} {{ \"%}\" }} {{ {'a': {'b': 1}} }} }} %} #}", "{}"},
    {"comment_with_minus_inside", "a {# x - y -#}   b {#- z #} c", "{}"},
    {"lstrip_tabs_and_text_before", "\t\t{% if true %}x{% endif %}\ntext {% if true %}y{% endif %}\n  \t{# c #}\nz", "{}"},
    {"minus_at_start_and_end", "  \n{%- if true -%}\n  a\n{%- endif -%}\n  ", "{}"},
    {"nested_blocks_whitespace", "{% for m in ms %}\n  {% if m %}\n    [{{ m }}]\n  {% else %}\n    none\n  {% endif %}\n{% endfor %}\n", "{\"ms\": [1, 0, 2]}"},
    {"set_then_text", "{% set x = 1 %}\n  {{ x }}\n{% set y = 2 -%}\n  {{ y }}", "{}"},
    {"line_statement_prefix_is_text", "# for x in y\n## heading\n", "{}"},
    {"test_argument_forms", "{{ 9 is divisibleby(3) }} {{ none is sameas none }} {{ x is sameas x }} {{ 'a' is in('abc') }}", "{\"x\": [1]}"},
    // found by comparing random expressions with Jinja2
    {"title_filter_word_starts", "{{ \"(1, 'x') a-b [c] <d> {e} it's\" | title }} {{ \"it's\".title() }}", "{}"},
    {"select_map_falsy_non_iterables", "{{ false | select | list }} {{ 0 | map('string') | list }} {{ none | selectattr('a') | list }}", "{}"},
    {"even_odd_floats", "{{ 0.0 is even }} {{ 3.0 is odd }} {{ 2.5 is odd }}", "{}"},
    {"dict_in_dict_unhashable", "{{ {} in {} }}", "{}"},
    {"float_int_of_undefined", "{{ missing | float }}", "{}"},
    {"lower_upper_tests_on_str", "{{ ['b'] is lower }} {{ {'K': 1} is upper }} {{ 1 is lower }}", "{}"},
    {"unique_unhashable", "{{ [{}, {}] | unique | list }}", "{}"},
    {"float_modulo_signs", "{{ false % -1.5 }} {{ 0.0 // -1.5 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} {{ -0.0 % 5 }}", "{}"},
    {"for_else_after_break_continue", "{% for m in [1, 2] %}a{% continue %}b{% else %}E{% endfor %} {% for m in [1, 2] %}a{% break %}{% else %}E{% endfor %} {% for m in [1, 2] %}{% if m == 2 %}{% break %}{% endif %}a{% else %}E{% endfor %}", "{}"},
    {"break_in_for_else_breaks_outer", "{% for i in range(3) %}{{ i }}{% for k in [] %}{% else %}{% if i == 1 %}{% break %}{% endif %}{% endfor %}{% endfor %}", "{}"},
    {"block_set_scope", "{% for i in [1, 2] %}{% set y %}{% set x = i %}z{% endset %}[{{ x }}{{ y }}]{% endfor %}{% set x = 'a' %}{% set y %}{% set x = 'b' %}{% endset %}{{ x }}", "{}"},
    {"top_level_store_first_is_undefined_before", "{% for m in 'ab' %}[{{ x }}]{% endfor %}{% macro m() %}({{ x }}){% endmacro %}{{ m() }}{% set x = 3 %}{{ m() }}{% for m in 'a' %}[{{ x }}]{% endfor %}", "{\"x\": 0}"},
    {"top_level_load_first_resolves", "[{{ x }}]{% for m in 'ab' %}[{{ x }}]{% endfor %}{% set x = 3 %}{% if true %}{% set z = 1 %}{% endif %}{% for m in 'a' %}{{ z }}{% endfor %}", "{\"x\": 0, \"z\": 5}"},
    {"float_filter_strings", "{{ '0x10' | float }} {{ ' 1e3 ' | float }} {{ 'inf' | float }} {{ '0x10' | int }} {{ '12' | int }}", "{}"},
    // literals and printing
    {"print_values", "{{ 1 }} {{ 1.0 }} {{ 2.50 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ 1/3 }} {{ true }} {{ none }} {{ 'x' }}", "{}"},
    {"print_containers", "{{ [1, 'a', none, true, 2.5] }} {{ {'k': 'v', 'n': [1]} }} {{ (1,) }} {{ (1, 'b') }} {{ () }}", "{}"},
    {"print_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'back\\\\slash', 'tab\\tnl\\n'] }}", "{}"},
    {"print_repr_unicode", "{{ ['é', '日本', '🙂', '\\u00a0', '\\x07', '\\u200b'] }}", "{}"},
    {"print_context_values", "{{ n }} {{ f }} {{ b }} {{ z }} {{ l }} {{ d }}", "{\"n\": 42, \"f\": 0.1, \"b\": false, \"z\": null, \"l\": [1.5, \"x\"], \"d\": {\"b\": 1, \"a\": 2}}"},
    {"string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\x41\\u00e9\\U0001F600\\d' }}", "{}"},
    {"adjacent_strings", "{{ 'a' 'b' \"c\" }}", "{}"},
    {"integers_underscore", "{{ 1_000 + 2 }}", "{}"},
    // arithmetic and operators
    {"arithmetic", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 3 * 'ab' }} {{ [1] * 3 }} {{ true + 1 }}", "{}"},
    {"concat_tilde", "{{ 1 ~ 'a' ~ none ~ undefined_name ~ [1] }}", "{}"},
    {"list_concat", "{{ [1, 2] + [3] }} {{ (1,) + (2,) }}", "{}"},
    {"comparisons", "{{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] == [1, 2] }} {{ {'a': 1} == {'a': 1} }} {{ 'a' != 'b' }} {{ [1, 2] < [1, 3] }}", "{}"},
    {"in_operator", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in ['y'] }} {{ 'x' in missing }}", "{}"},
    {"and_or_values", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' or [] }} {{ none and 1 }} {{ not 0 }} {{ not 'a' }}", "{}"},
    {"inline_if", "{{ 'yes' if true else 'no' }} {{ 'yes' if false else 'no' }} [{{ 'yes' if false }}] {{ 1 if false else 2 if true else 3 }}", "{}"},
    {"unary", "{{ -3 }} {{ +3 }} {{ -(2 + 1) }} {{ - 2 ** 2 }} {{ -x|abs }}", "{\"x\": 4}"},
    {"filter_precedence", "{{ 'a' + x | string }} {{ items | length - 1 }} {{ not x is defined }}", "{\"x\": 5, \"items\": [1, 2, 3]}"},
    // attribute and item access
    {"getattr_getitem", "{{ d.a }} {{ d['a'] }} [{{ d.missing }}] {{ l[0] }} {{ l[-1] }} [{{ l[5] }}] {{ l.0 }} {{ s[1] }} {{ s[-1] }}", "{\"d\": {\"a\": 1, \"items\": 2}, \"l\": [\"x\", \"y\"], \"s\": \"héllo\"}"},
    {"dict_key_named_like_method", "{{ d['items'] }} {{ d['get'] }}", "{\"d\": {\"items\": 2, \"get\": 3}}"},
    {"undefined_attribute_of_undefined", "{{ missing.attr }}", "{}"},
    {"undefined_attribute_then_attribute", "{{ d.missing.attr }}", "{\"d\": {}}"},
    {"none_attribute", "[{{ none.x }}]", "{}"},
    {"slicing", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[5:] }} {{ s[1:3] }} {{ s[::-1] }} {{ t[1:] }}", "{\"l\": [1, 2, 3, 4], \"s\": \"añb🙂c\", \"t\": \"abc\"}"},
    // tests
    {"tests_types", "{{ 1 is number }} {{ 1.5 is float }} {{ true is number }} {{ true is integer }} {{ 1 is integer }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ missing is iterable }} {{ none is none }} {{ true is boolean }} {{ 0 is boolean }}", "{}"},
    {"tests_defined", "{{ x is defined }} {{ y is defined }} {{ y is undefined }} {{ x is not none }} {{ z is none }} {{ z is defined }}", "{\"x\": 1, \"z\": null}"},
    {"tests_sequence", "{{ 'a' is sequence }} {{ [1] is sequence }} {{ {} is sequence }} {{ 1 is sequence }} {{ missing is sequence }}", "{}"},
    {"tests_values", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'a' is eq 'a' }} {{ 1 is ne 2 }} {{ 2 is gt 1 }} {{ 2 is lt(1) }} {{ 'x' is in ['x'] }} {{ false is sameas false }} {{ true is true }} {{ 1 is true }} {{ 'abc' is lower }} {{ 'ABC' is upper }}", "{}"},
    {"tests_callable", "{{ range is callable }} {{ 'a'.strip is callable }} {{ 1 is callable }}", "{}"},
    // filters
    {"filter_tojson", "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ 'é\"\\n' | tojson }}|{{ 'é🙂' | tojson(ensure_ascii=true) }}", "{\"d\": {\"z\": [1, 2.0, null, true, {\"a\": \"ü\"}], \"a\": {}, \"e\": []}}"},
    {"filter_tojson_indent_string", "{{ d | tojson(indent='\\t') }}|{{ d | tojson(indent=0) }}|{{ [] | tojson(indent=4) }}", "{\"d\": {\"a\": [1, {\"b\": 2}]}}"},
    {"filter_tojson_floats", "{{ [0.1, 1e-7, 1e22, 3.0, -0.0, 123456789.123, 1.5e300] | tojson }}", "{}"},
    {"filter_tojson_control_chars", "{{ '\\x01\\x1f\\x7f\\u2028' | tojson }} {{ '\\x7f\\u2028' | tojson(ensure_ascii=true) }}", "{}"},
    {"filter_string_length", "{{ 1 | string }} {{ none | string }} {{ [1, 'a'] | string }} {{ 'héllo' | length }} {{ [1, 2] | length }} {{ {'a': 1} | length }} {{ missing | length }} {{ 'x' | count }}", "{}"},
    {"filter_trim", "[{{ '  a b \\n' | trim }}] [{{ 'xxaxx' | trim('x') }}] [{{ missing | trim }}] [{{ '\\u3000a\\u00a0' | trim }}]", "{}"},
    {"filter_join", "{{ [1, 2, 3] | join(', ') }} {{ ['a', 'b'] | join }} {{ users | join(', ', attribute='name') }}", "{\"users\": [{\"name\": \"ann\"}, {\"name\": \"bob\"}]}"},
    {"filter_default", "{{ missing | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | d('n') }} {{ x | default('d') }}", "{\"x\": 0}"},
    {"filter_items_dictsort", "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %} {% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %} {{ d | dictsort(reverse=true) }} {{ d | dictsort(by='value') }}", "{\"d\": {\"b\": 2, \"a\": 3, \"C\": 1}}"},
    {"filter_list_first_last", "{{ 'abc' | list }} {{ [3, 1] | first }} {{ [3, 1] | last }} {{ {'a': 1} | list }} [{{ [] | first }}]", "{}"},
    {"filter_select_reject", "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3] | reject('equalto', 2) | list }} {{ [0, 1, '', 'a'] | select | list }}", "{}"},
    {"filter_selectattr", "{{ msgs | selectattr('role', 'equalto', 'user') | list }} {{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='content') | list }} {{ msgs | selectattr('flag') | list }}", "{\"msgs\": [{\"role\": \"user\", \"content\": \"a\", \"flag\": true}, {\"role\": \"assistant\", \"content\": \"b\", \"flag\": false}]}"},
    {"filter_map", "{{ ['a', 'B'] | map('upper') | list }} {{ [1, 2] | map('string') | join('-') }} {{ d | map(attribute='x', default=0) | list }}", "{\"d\": [{\"x\": 1}, {}]}"},
    {"filter_case", "{{ 'hello world' | upper }} {{ 'HeLLo' | lower }} {{ 'hello wORLD' | title }} {{ 'hELLO' | capitalize }}", "{}"},
    {"filter_replace", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }}", "{}"},
    {"filter_numbers", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '2.5' | float }} {{ 2 | float }} {{ -3 | abs }} {{ [1, 2, 3] | sum }} {{ [3, 1, 2] | max }} {{ [3, 1, 2] | min }} {{ 2.5 | round }}", "{}"},
    {"filter_sort_unique_reverse", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [3, 1] | sort(reverse=true) }} {{ ['a', 'A', 'b'] | unique | list }} {{ [1, 2] | reverse | list }} {{ 'abc' | reverse }} {{ users | sort(attribute='age') | map(attribute='name') | join }}", "{\"users\": [{\"name\": \"x\", \"age\": 3}, {\"name\": \"y\", \"age\": 1}]}"},
    {"filter_safe_concat", "{{ ('<a>' | safe) + '<b>' }} {{ ('<a>' | safe) ~ '<b>' }} {{ '<c>' | safe }}", "{}"},
    {"filter_block", "{% filter upper %}shout {{ 'this' }}{% endfilter %}", "{}"},
    // string methods
    {"string_methods", "[{{ '  x  '.strip() }}] [{{ 'xxaxx'.strip('x') }}] [{{ '\\n\\na\\n'.lstrip('\\n') }}] [{{ 'a  '.rstrip() }}] {{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }} {{ 'aXbX'.replace('X', '-') }} {{ 'ab'.upper() }} {{ 'AB'.lower() }} {{ 'hi there'.title() }} {{ 'abcb'.find('b') }} {{ 'abcb'.rfind('b') }} {{ 'abcb'.count('b') }} {{ '-'.join(['a', 'b']) }}", "{}"},
    {"string_split_think", "{{ c.split('</think>')[-1].lstrip('\\n') }}|{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') }}|{{ c.split('</think>', 1)[1] }}", "{\"c\": \"<think>\\nreason\\n</think>\\n\\nanswer\"}"},
    {"string_method_unicode_strip", "[{{ '\\u3000 é \\u00a0'.strip() }}] {{ 'a\\u2003b'.split() }}", "{}"},
    // dict and list methods
    {"dict_methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }} {{ d.keys() | list }} {{ d.values() | list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", "{\"d\": {\"a\": 1, \"b\": [2]}}"},
    {"dict_views", "{{ d.items() }} {{ d.keys() }} {{ d.values() }} {{ d.keys() | list }} {{ d.items() | length }} {{ 'a' in d.keys() }} {{ d.keys() == ['a', 'b'] }}", "{\"d\": {\"a\": 1, \"b\": [2]}}"},
    {"not_subscriptable_is_undefined", "[{{ 5[1:] }}] [{{ none[1:] }}] [{{ 'abc'[1:'x'] }}] {{ [1, 2][none:1] }} [{{ 5[0] }}] {{ 1 is sameas 1 }}", "{\"d\": {\"a\": 1}}"},
    {"dict_slice_fails", "{{ d[1:] }}", "{\"d\": {\"a\": 1}}"},
    {"dict_view_subscript_undefined", "[{{ d.items()[0] }}]", "{\"d\": {\"a\": 1}}"},
    {"dict_view_tojson_fails", "{{ d.keys() | tojson }}", "{\"d\": {\"a\": 1}}"},
    {"items_filter_length_fails", "{{ d | items | length }}", "{\"d\": {\"a\": 1}}"},
    {"items_filter_list", "{{ d | items | list }} {{ missing | items | list }}", "{\"d\": {\"a\": 1}}"},
    {"loop_object_tojson_fails", "{% for x in [1] %}{{ loop | tojson }}{% endfor %}", "{}"},
    {"list_pop_allowed", "{% set l = [1, 2, 3] %}{{ l.pop(0) }}{{ l }}{{ l.pop() }}{{ l }}", "{}"},
    {"list_append_unsafe", "{% set l = [] %}{% set _ = l.append(1) %}{{ l }}", "{}"},
    {"dict_update_unsafe", "{% set d = {} %}{{ d.update({'a': 1}) }}", "{}"},
    {"unsafe_attribute_prints_empty", "[{{ [].append }}] {{ [].append is defined }}", "{}"},
    // loops
    {"loop_variables", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}[{{ loop.previtem }}|{{ loop.nextitem }}] {% endfor %}", "{}"},
    {"loop_else", "{% for x in [] %}x{% else %}empty{% endfor %} {% for x in missing %}x{% else %}undefined is empty{% endfor %}", "{}"},
    {"loop_filter", "{% for x in range(10) if x is odd %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %}", "{}"},
    {"loop_unpack", "{% for a, b in [[1, 2], (3, 4), 'xy'] %}{{ a }}-{{ b }} {% endfor %}", "{}"},
    {"loop_dict", "{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}", "{}"},
    {"loop_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", "{}"},
    {"loop_nested", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}{{ loop.index }} {% endfor %}", "{}"},
    {"loop_scope", "{% set x = 0 %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}{% endfor %}{{ x }}", "{}"},
    {"range_forms", "{{ range(3) | list }} {{ range(1, 4) | list }} {{ range(10, 0, -3) | list }} {{ range(0) | list }}", "{}"},
    {"range_too_big", "{{ range(200000) | length }}", "{}"},
    // set
    {"set_forms", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = [3, 4] %}{% set d, e = c %}{{ d }}{{ e }}{% set t = 1, 2 %}{{ t }}", "{}"},
    {"set_block", "{% set captured %}inner {{ 1 + 1 }}{% endset %}[{{ captured }}]{% set up | upper %}shout{% endset %}{{ up }}", "{}"},
    {"namespace", "{% set ns = namespace(a=1, b=[]) %}{% for i in [1, 2, 3] %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }} {{ ns.b }} {% set ns2 = namespace() %}{% set ns2.x = 'y' %}{{ ns2.x }}", "{}"},
    {"set_attribute_non_namespace", "{% set d = {} %}{% set d.x = 1 %}", "{}"},
    {"set_overrides_context", "{{ x }}{% set x = 2 %}{{ x }}", "{\"x\": 1}"},
    // macros
    {"macro_basic", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }} [{{ greet() }}]", "{}"},
    {"macro_recursion", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n }}*{{ fact(n - 1) }}{% endif %}{% endmacro %}{{ fact(5) }}", "{}"},
    {"macro_sees_later_globals", "{% macro m() %}{{ th }}{% endmacro %}{% set th = 5 %}{{ m() }}", "{}"},
    {"macro_local_set", "{% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}", "{}"},
    {"macro_varargs_kwargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k='v') }}", "{}"},
    {"macro_too_many_args", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", "{}"},
    {"macro_unknown_kwarg", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=1) }}", "{}"},
    {"macro_whitespace", "{%- macro m(x) -%}\n  <{{ x }}>\n{%- endmacro -%}\n{{ m(1) }}\n{{ m(2) }}", "{}"},
    {"call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inside {{ 1 }}{% endcall %}", "{}"},
    {"call_block_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}[{{ x }}]{% endcall %}", "{}"},
    // globals
    {"raise_exception", "before{{ raise_exception('custom failure: ' ~ n) }}", "{\"n\": 3}"},
    {"strftime_now", "{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }}", "{}"},
    {"dict_global", "{{ dict(a=1, b='x') }}", "{}"},
    // undefined semantics
    {"undefined_prints_empty", "[{{ missing }}] {{ missing is defined }} {{ not missing }} {{ missing == missing }} {{ missing | string }}", "{}"},
    {"undefined_plus_fails", "{{ missing + 'x' }}", "{}"},
    {"undefined_call_fails", "{{ missing() }}", "{}"},
    {"undefined_compare_fails", "{{ missing < 1 }}", "{}"},
    {"str_plus_int_fails", "{{ 'a' + 1 }}", "{}"},
    {"none_in_fails", "{{ 'a' in none }}", "{}"},
    {"tojson_undefined_fails", "{{ missing | tojson }}", "{}"},
    {"divide_by_zero_fails", "{{ 1 / 0 }}", "{}"},
    // errors at parse time
    {"unknown_filter", "{{ 1 | nosuch }}", "{}"},
    {"unknown_filter_in_if_deferred", "{% if false %}{{ 1 | nosuch }}{% endif %}ok", "{}"},
    {"unknown_filter_in_if_taken", "{% if true %}{{ 1 | nosuch }}{% endif %}ok", "{}"},
    {"unknown_test", "{{ 1 is nosuch }}", "{}"},
    {"syntax_error", "line one\n{{ 1 + }}", "{}"},
    {"unclosed_block", "{% if true %}never closed", "{}"},
    {"unclosed_variable", "{{ 1 ", "{}"},
    {"unclosed_comment", "{# never", "{}"},
    {"unknown_statement", "{% frobnicate %}", "{}"},
};
// clang-format on

std::vector<JinjaJob> feature_jobs() {
    std::vector<JinjaJob> jobs;
    for (const auto& f : features) jobs.push_back({f.name, f.source, nlohmann::ordered_json::parse(f.context)});
    return jobs;
}

// Random expressions over a fixed context: operators, filters, tests,
// methods and literals combined as no table would think of. The engine may
// refuse one as unsupported (counted, printed) but never print otherwise.
std::string random_expression(std::mt19937& rng, int depth) {
    static const char* const atoms[] = {
        "1", "0", "-3", "2.5", "0.1", "1e20", "'a'", "'Ab c'", "''", "' x '", "\"q'\"", "none", "true", "false",
        "[1, 2, 3]", "[]", "['b', 'a']", "{'k': 'v', 'n': 1}", "{}", "s", "n", "f", "l", "d", "e", "missing", "msgs",
        "(1, 'x')", "msgs[0]", "d.k", "d['n']", "l[-1]", "s[1:]", "l[::-1]"};
    static const char* const operators[] = {"+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"};
    static const char* const filters[] = {
        "length", "string", "trim", "upper", "lower", "list", "first", "last", "join(',')", "tojson", "tojson(indent=2)",
        "default('D')", "items|list", "sort", "reverse|list", "unique|list", "int", "float", "abs", "title", "capitalize",
        "replace('a','b')", "select|list", "map('string')|list", "dictsort", "selectattr('role','equalto','user')|list",
        "sum", "max", "min", "count"};
    static const char* const tests[] = {"defined", "none", "string", "number", "integer", "float", "mapping", "iterable",
                                        "sequence", "odd", "even", "true", "false", "boolean", "undefined", "lower", "upper"};
    static const char* const methods[] = {".strip()", ".upper()", ".split()", ".split('a')", ".startswith('a')",
                                          ".endswith('c')", ".replace('a', 'z')", ".lstrip('A')", ".items()|list",
                                          ".keys()|list", ".get('k')", ".get('z', 0)", ".title()", ".find('b')", ".count('a')"};
    auto pick = [&](const auto& list) { return std::string(list[rng() % std::size(list)]); };
    const unsigned r = rng() % 100;
    if (depth > 2 || r < 30) return pick(atoms);
    if (r < 55) return "(" + random_expression(rng, depth + 1) + " " + pick(operators) + " " + random_expression(rng, depth + 1) + ")";
    if (r < 70) return "(" + random_expression(rng, depth + 1) + " | " + pick(filters) + ")";
    if (r < 80) return "(" + random_expression(rng, depth + 1) + (rng() % 2 ? " is not " : " is ") + pick(tests) + ")";
    if (r < 90) return "(" + random_expression(rng, depth + 1) + ")" + pick(methods);
    if (r < 95)
        return "(" + random_expression(rng, depth + 1) + " if " + random_expression(rng, depth + 1) + " else " +
               random_expression(rng, depth + 1) + ")";
    return "(not " + random_expression(rng, depth + 1) + ")";
}

// One test, so that ctest (a process per test) starts Python once for all.
TEST(JinjaFeatures, FeaturesAndRandomExpressionsRenderLikeJinja2) {
    auto jobs = feature_jobs();
    const size_t feature_count = jobs.size();
    const auto context = nlohmann::ordered_json::parse(
        R"({"s": "abc", "n": 7, "f": -1.5, "l": [3, 1, 2], "d": {"k": "v", "n": 1, "z": [1]}, "e": "",)"
        R"( "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})");
    std::mt19937 rng(17);
    for (int i = 0; i < 3000; ++i) jobs.push_back({"random " + std::to_string(i), "{{ " + random_expression(rng, 0) + " }}", context});
    const auto references = waste_test::render_with_jinja2(jobs);
    ASSERT_FALSE(references.empty());
    int refused = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const auto& job = jobs[i];
        const auto it = references.find(job.id);
        ASSERT_NE(it, references.end()) << job.id;
        const std::string difference = waste_test::compare_with_jinja2(job, it->second);
        const bool refused_by_name = (difference.rfind("Jinja2 rendered, WASTE failed: ", 0) == 0 &&
                                      difference.find(" is not supported") != std::string::npos) ||
                                     difference.find("; WASTE failed as unsupported: ") != std::string::npos;
        if (i >= feature_count && refused_by_name) {
            ++refused;  // an unsupported construct refused by name
            continue;
        }
        EXPECT_EQ(difference, "") << job.id << ": " << job.template_source;
    }
    std::printf("%zu features and %zu random expressions compared with Jinja2; %d random ones refused as unsupported\n",
                feature_count, jobs.size() - feature_count, refused);
}

std::string error_of(const std::string& source, const std::string& context = "{}", const tmpl::RenderOptions& options = {}) {
    try {
        const auto parsed = tmpl::Template::parse(source, "t.jinja");
        tmpl::render(parsed, tmpl::from_json(nlohmann::ordered_json::parse(context)), options);
    } catch (const waste::Error& e) {  // TemplateError, or the context refused by from_json
        return e.what();
    }
    return "(no error)";
}

TEST(JinjaFeatures, ErrorsNameTheTemplateAndLine) {
    EXPECT_EQ(error_of("a\nb\n{{ 1 | nosuch }}"), "template t.jinja line 3: no filter named 'nosuch'");
    EXPECT_EQ(error_of("a\n{% if x %}\n{{ 1 + }}\n{% endif %}"), "template t.jinja line 3: unexpected '}}' in an expression");
    EXPECT_EQ(error_of("x\n{% for a in b %}\n"), "template t.jinja line 2: unexpected end of template, expected 'endfor'");
    EXPECT_EQ(error_of("{% raw %}x{% endraw %}"), "template t.jinja line 1: {% raw %} blocks are not supported");
    EXPECT_EQ(error_of("\n\n{% include 'x' %}"), "template t.jinja line 3: unsupported or unknown statement 'include'");
    EXPECT_EQ(error_of("1\n2\n{{ missing.attr }}"), "template t.jinja line 3: 'missing' is undefined");
    EXPECT_EQ(error_of("{{ 'x'.zfill(3) }}"), "template t.jinja line 1: str.zfill is not supported");
    EXPECT_EQ(error_of("x\n{% for i in [1] if i %}{% set ns.a = 1 %}{% endfor %}"),
              "template t.jinja line 2: a loop filter ('for ... if') over a body that calls or sets a namespace attribute is not "
              "supported (Jinja2 filters lazily, item by item)");
    EXPECT_EQ(error_of("{% for i in [1] %}{% set y %}{% break %}{% endset %}{% endfor %}"),
              "template t.jinja line 1: 'break' inside a block set or filter block is not supported");
    EXPECT_EQ(error_of("{% macro m() %}{% continue %}{% endmacro %}"), "template t.jinja line 1: 'continue' outside a loop");
    try {
        tmpl::render(tmpl::Template::parse("{{ raise_exception('stop: ' ~ 1) }}", "t"), tmpl::Value::none());
        ADD_FAILURE() << "no exception";
    } catch (const tmpl::TemplateError& e) {
        EXPECT_TRUE(e.raised());
        EXPECT_EQ(e.message(), "stop: 1");
    }
}

TEST(JinjaFeatures, ContextIsNotChanged) {
    const auto parsed = tmpl::Template::parse("{{ l.pop() }}{{ l }}", "t");
    const auto context = tmpl::from_json(nlohmann::ordered_json::parse(R"({"l": [1, 2]})"));
    EXPECT_EQ(tmpl::render(parsed, context), "2[1]");
    EXPECT_EQ(tmpl::render(parsed, context), "2[1]");
}

// Hostile templates: each fails with a clear error, in bounded time.
TEST(JinjaHostile, FailsCleanlyWithinBounds) {
    const auto start = std::chrono::steady_clock::now();
    tmpl::RenderOptions small;
    small.limits.max_steps = 200'000;
    const std::string nested_parens = std::string(5000, '(') + "1" + std::string(5000, ')');
    std::string nested_ifs;
    for (int i = 0; i < 2000; ++i) nested_ifs += "{% if true %}";
    std::string deep_json = "{\"x\": " + std::string(1000, '[') + std::string(1000, ']') + "}";
    std::string attribute_chain = "{{ x", plus_chain = "{{ 1", filter_chain = "{{ 'a'", test_chain = "{{ x";
    for (int i = 0; i < 5000; ++i) {
        attribute_chain += ".a";
        plus_chain += " + 1";
        filter_chain += " | trim";
        test_chain += "() ";
    }
    const std::vector<std::pair<std::string, std::string>> cases = {
        {attribute_chain + " }}", "an expression nested deeper than 256"},
        {plus_chain + " }}", "an expression nested deeper than 256"},
        {filter_chain + " }}", "an expression nested deeper than 256"},
        {test_chain + " }}", "an expression nested deeper than 256"},
        {"{{ " + nested_parens + " }}", "brackets nested deeper than 256"},
        {"{{ " + std::string(3000, '-') + "1 }}", "nested deeper than 128"},
        {"{{ " + std::string(3000, '[') + " }}", "brackets nested deeper than 256"},
        {nested_ifs, "nested deeper than 128"},
        {"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "calls nested deeper than 200"},
        {"{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}", "ran more than 200000 steps"},
        {"{% set s = namespace(t='x') %}{% for i in range(100) %}{% set s.t = s.t ~ s.t %}{% endfor %}", "more than the limit of"},
        {"{{ 'x' * 100000000000 }}", "more than the limit of"},
        {"{{ [1] * 100000000000 }}", "more than the limit of"},
        {"{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output would be more than the limit"},
        {"{{ 9223372036854775807 + 1 }}", "integer overflow"},
        {"{{ 2 ** 64 }}", "integer overflow"},
        {"{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me.me is defined }}{{ ns | tojson }}", "not JSON serializable"},
        {"{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}", "nested deeper than 512 levels"},
        {"{% set ns = namespace(x={}) %}{% for i in range(100000) %}{% set ns.x = {'k': ns.x} %}{% endfor %}{{ ns.x }}", "nested deeper than 512 levels"},
        {"{{ 'abc", "unterminated string literal"},
        {"{% if %}", "unexpected '%}' in an expression"},
        {"{% for %}{% endfor %}", "expected a name"},
        {"{% endif %}", "unsupported or unknown statement 'endif'"},
        {"{{ x[1:2:0] }}", "slice step cannot be zero"},
    };
    for (const auto& [source, expected] : cases) {
        const std::string error = error_of(source, "{\"x\": [1, 2]}", small);
        EXPECT_NE(error.find(expected), std::string::npos) << source.substr(0, 120) << "\n  gave: " << error;
    }
    EXPECT_NE(error_of("{{ x }}", deep_json).find("nested deeper than 128"), std::string::npos);
    const std::string big(2u << 20, 'a');
    EXPECT_NE(error_of(big).find("more than the limit of"), std::string::npos);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("hostile cases took %.2f s\n", seconds);
}

}  // namespace
