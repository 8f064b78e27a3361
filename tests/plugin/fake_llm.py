"""A scripted OpenAI-compatible chat endpoint, so the real OpenCode client can run a tool offline.

usage: python fake_llm.py LOG_FILE CALLS_JSON   (prints the port it listens on, then serves)
The first request of a turn answers with the tool calls CALLS_JSON ([{"name", "arguments"}, ...]);
a request whose last message is the tool result (or any request without tools) answers "done".
Every request body is appended to LOG_FILE, so a test can read the tool result the model saw.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, CALLS = sys.argv[1], json.loads(sys.argv[2])


def chunk(delta: dict, finish: str | None = None) -> str:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with open(LOG, "a", encoding="utf-8") as log:
            log.write(json.dumps(body) + "\n")
        messages = body.get("messages") or []
        if not body.get("tools") or (messages and messages[-1].get("role") == "tool"):
            out = chunk({"role": "assistant", "content": "done"}) + chunk({}, "stop")
        else:
            calls = [{"index": i, "id": f"call_{i}", "type": "function",
                      "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                     for i, c in enumerate(CALLS)]
            out = chunk({"role": "assistant", "tool_calls": calls}) + chunk({}, "tool_calls")
        data = (out + "data: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
