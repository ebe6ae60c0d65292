#!/usr/bin/python3
"""make_conversations.py — writes conversations.json, the corpus every chat
template in ../shared/data/chat-templates is rendered on (by Jinja2 and by
WASTE's engine, tests/jinja_templates_test.cpp). Each entry is a name and a
template context: messages, tools, add_generation_prompt, bos/eos tokens and
template variables such as enable_thinking. Rerun after editing; the JSON
is what the test reads.
"""
import json

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city — returns °C.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit"},
                "days": {"type": "integer", "description": "Forecast days", "default": 1},
            },
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.\n\nUse sparingly.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "filters": {"type": "array", "items": {"type": "string"}},
                "options": {"type": "object", "properties": {"safe": {"type": "boolean"}, "limit": {"type": "number"}}},
            },
            "required": ["query", "filters"],
        },
    },
}

SYSTEM = {"role": "system", "content": "You are a careful assistant."}
WEIRD = ("Ünïcødé 日本語 🙂 \"quotes\" 'single' {{ braces }} {% tag %} <|im_end|> <|eot_id|> [INST] "
         "back\\slash\ttab\nnew line\r\n</think> <tool_call> & < > \u00a0nbsp \u200bzwsp")


def call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def context(messages, add_generation_prompt=True, **extra):
    c = {"messages": messages, "add_generation_prompt": add_generation_prompt,
         "bos_token": "<s>", "eos_token": "</s>"}
    c.update(extra)
    return c


conversations = []


def add(name, ctx):
    conversations.append({"name": name, "context": ctx})


plain = [SYSTEM, {"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi, how can I help?"},
         {"role": "user", "content": "What is 2+2?"}]
add("plain", context(plain))
add("plain_no_generation_prompt", context(plain, False))
add("user_only", context([{"role": "user", "content": "Just one question."}]))
add("multi_turn_ending_assistant", context([
    {"role": "user", "content": "First."}, {"role": "assistant", "content": "One."},
    {"role": "user", "content": "Second."}, {"role": "assistant", "content": "Two."},
    {"role": "user", "content": "Third."}, {"role": "assistant", "content": "Three."}], False))
add("tools_declared", context([SYSTEM, {"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER, SEARCH]))
add("tools_declared_no_system", context([{"role": "user", "content": "Find news."}], tools=[SEARCH]))
add("tool_call_round", context([
    SYSTEM, {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [call("call12345", "get_weather", {"city": "Paris", "unit": "celsius"})]},
    {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
    {"role": "assistant", "content": "It is 21.5 °C and clear."},
    {"role": "user", "content": "Thanks!"}], tools=[WEATHER]))
add("tool_call_pending_result", context([
    {"role": "user", "content": "Search cats and weather in Oslo"},
    {"role": "assistant", "content": "Let me look.", "tool_calls": [
        call("abcdefghi", "search", {"query": "cats", "filters": ["images", "recent"], "options": {"safe": True, "limit": 2.5}}),
        call("jklmnopqr", "get_weather", {"city": "Oslo", "days": 3})]},
    {"role": "tool", "tool_call_id": "abcdefghi", "name": "search", "content": "3 results"},
    {"role": "tool", "tool_call_id": "jklmnopqr", "name": "get_weather", "content": "-2 °C, snow"}], tools=[WEATHER, SEARCH]))
add("tool_call_arguments_nested", context([
    {"role": "user", "content": "Do it"},
    {"role": "assistant", "content": None, "tool_calls": [call("xyz987654", "search", {
        "query": "quote \" and \\ back", "filters": [], "options": {"safe": False, "limit": 1e-7, "none": None, "big": 12345678901234,
                                                               "float": 3.0, "neg": -0.5, "uni": "ß→∑"}})]},
    {"role": "tool", "tool_call_id": "xyz987654", "content": "done"},
    {"role": "assistant", "content": "Done."}], False, tools=[SEARCH]))
add("reasoning_content", context([
    SYSTEM, {"role": "user", "content": "Think first: 17*3?"},
    {"role": "assistant", "content": "51", "reasoning_content": "17*3 = 51, check: 50+1."},
    {"role": "user", "content": "And 18*3?"},
    {"role": "assistant", "content": "54", "reasoning_content": "18*3 = 54."}], False))
add("reasoning_then_prompt", context([
    {"role": "user", "content": "Think: 2^10?"},
    {"role": "assistant", "content": "1024", "reasoning_content": "2^10 = 1024."},
    {"role": "user", "content": "2^11?"}], True))
add("inline_think_tags", context([
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "<think>\nhidden reasoning\n</think>\n\nvisible answer"},
    {"role": "user", "content": "q2"}], True))
add("unusual_characters", context([
    {"role": "system", "content": WEIRD}, {"role": "user", "content": WEIRD},
    {"role": "assistant", "content": WEIRD}, {"role": "user", "content": "again: " + WEIRD}]))
add("empty_contents", context([
    {"role": "system", "content": ""}, {"role": "user", "content": ""}, {"role": "assistant", "content": ""},
    {"role": "user", "content": "  padded  \n"}]))
add("thinking_enabled", context(plain, enable_thinking=True, thinking=True))
add("thinking_disabled", context(plain, enable_thinking=False, thinking=False))
add("thinking_disabled_no_prompt", context(plain, False, enable_thinking=False))
add("other_tokens", dict(context(plain), bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"))
add("tools_none", context(plain, tools=None))
add("tool_arguments_string", context([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "tool_calls": [call("call00001", "get_weather", "{\"city\": \"Rome\"}")]},
    {"role": "tool", "tool_call_id": "call00001", "content": "sunny"}], True, tools=[WEATHER]))
add("bad_tool_call_id", context([
    {"role": "user", "content": "x"},
    {"role": "assistant", "content": "", "tool_calls": [call("short", "get_weather", {"city": "Nice"})]},
    {"role": "tool", "tool_call_id": "short", "content": "ok"}], True, tools=[WEATHER]))
add("content_parts", context([
    {"role": "system", "content": [{"type": "text", "text": "System as parts."}]},
    {"role": "user", "content": [{"type": "text", "text": "Look at this:"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                                 {"type": "text", "text": "What is it?"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
    {"role": "user", "content": [{"type": "text", "text": "Sure? 'quoted' \"double\""}]}]))
add("tool_result_parts", context([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "tool_calls": [call("call00002", "get_weather", {"city": "Bern"})]},
    {"role": "tool", "tool_call_id": "call00002", "name": "get_weather", "content": [{"type": "text", "text": "cold"}, {"output": "4 °C"}]}],
    True, tools=[WEATHER]))
add("roles_not_alternating", context([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]))

long_messages = [SYSTEM]
for turn in range(24):
    long_messages.append({"role": "user", "content": f"Question {turn}: explain item {turn} in detail, with \"quotes\" and ünïcode."})
    if turn % 6 == 5:
        long_messages.append({"role": "assistant", "content": "", "tool_calls": [call(f"call{turn:05d}", "get_weather", {"city": f"City {turn}", "days": turn})]})
        long_messages.append({"role": "tool", "tool_call_id": f"call{turn:05d}", "content": f"result {turn}"})
        long_messages.append({"role": "assistant", "content": f"Answer {turn} " + "lorem ipsum " * 20})
    else:
        long_messages.append({"role": "assistant", "content": f"Answer {turn} " + "lorem ipsum " * 20, "reasoning_content": f"thinking about {turn}"})
long_messages.append({"role": "user", "content": "Final question."})
add("fifty_messages", context(long_messages[:50] if long_messages[49]["role"] == "user" else long_messages[:49] + [{"role": "user", "content": "Last."}], tools=[WEATHER, SEARCH]))

# The benchmark's conversation: 50 messages, no tool calls (Kimi-K2-Thinking
# cannot render tool calls under the sandbox, see the test), reasoning on
# the assistant turns after the last user message only.
plain_long = [SYSTEM]
for turn in range(24):
    plain_long.append({"role": "user", "content": f"Question {turn}: explain item {turn} in detail, with \"quotes\" and ünïcode."})
    plain_long.append({"role": "assistant", "content": f"Answer {turn} " + "lorem ipsum " * 20})
plain_long.append({"role": "user", "content": "Final question."})
assert len(plain_long) == 50
add("fifty_messages_plain", context(plain_long, tools=[WEATHER, SEARCH]))

with open("conversations.json", "w", encoding="utf-8") as out:
    json.dump(conversations, out, ensure_ascii=False, indent=1)
    out.write("\n")
