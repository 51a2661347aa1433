//! A scripted fake of the Anthropic Messages API, for driving the real
//! Claude Code client offline (tests/claude_code.rs).
//!
//! The client reaches it through `ANTHROPIC_BASE_URL` on 127.0.0.1 and asks
//! `POST /v1/messages` with `"stream": true`, one request a model turn. The
//! main agent's request is the one that offers the `Bash` tool: its answer
//! is the next step of the script (a tool call), counted by the tool
//! results the conversation already holds, and a closing text once the
//! script is done; any other request (a side query) gets a short text.
//! Answers are server-sent events in the Messages API's streaming shape.
//! Every request is kept, so that a test reads what the client sent: the
//! hooks' context, the skills offered, each tool result.
#![allow(dead_code)]

use std::io::{self, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::fake_github::{lock, read_request, write_response, Acceptor, Response};

/// One model turn of the script.
#[derive(Clone, Debug)]
pub enum Step {
    /// A Bash tool call running this command.
    Bash(String),
    /// A call of any other tool with this input (`Skill`, …).
    Tool { name: String, input: Value },
}

/// A tool result the client sent back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    pub tool_use_id: String,
    pub content: String,
    pub is_error: bool,
}

/// One request, as received.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub body: Value,
}

pub struct FakeModel {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _acceptor: Acceptor,
}

struct Shared {
    steps: Vec<Step>,
    final_text: String,
    received: Mutex<Vec<Received>>,
    stopping: Arc<AtomicBool>,
}

impl FakeModel {
    /// Serves `steps`, then `final_text`, on 127.0.0.1 (a free port).
    pub fn start(steps: Vec<Step>, final_text: &str) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake model server");
        let addr = listener.local_addr().expect("its address");
        let stopping = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            steps,
            final_text: final_text.to_owned(),
            received: Mutex::new(Vec::new()),
            stopping: Arc::clone(&stopping),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            Acceptor::start(listener, stopping, move |stream| {
                let _ = serve(&shared, stream);
            })
        };
        FakeModel {
            shared,
            addr,
            _acceptor: acceptor,
        }
    }

    /// What `ANTHROPIC_BASE_URL` is set to.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        lock(&self.shared.received).clone()
    }

    /// The main agent's requests (those that offer the Bash tool), in order.
    pub fn turns(&self) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter(|r| offers_bash(&r.body))
            .map(|r| r.body)
            .collect()
    }

    /// Every tool result of the conversation, as the last turn sent them.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let Some(last) = self.turns().pop() else {
            return Vec::new();
        };
        let mut results = Vec::new();
        for message in last["messages"].as_array().into_iter().flatten() {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] != "tool_result" {
                    continue;
                }
                let content = match &block["content"] {
                    Value::String(text) => text.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    other => other.to_string(),
                };
                results.push(ToolResult {
                    tool_use_id: block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    content,
                    is_error: block["is_error"].as_bool().unwrap_or(false),
                });
            }
        }
        results
    }
}

fn offers_bash(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == "Bash"))
}

fn tool_results_in(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .count()
}

fn serve(shared: &Shared, stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader, &mut writer)? {
        if shared.stopping.load(Ordering::SeqCst) {
            return Ok(());
        }
        let path = request
            .target
            .split('?')
            .next()
            .unwrap_or_default()
            .to_owned();
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        lock(&shared.received).push(Received {
            method: request.method.clone(),
            path: path.clone(),
            body: body.clone(),
        });
        let response = if request.method == "POST" && path == "/v1/messages" && body.is_object() {
            answer(shared, &body)
        } else {
            Response {
                status: 404,
                headers: vec![("content-type".into(), "application/json".into())],
                body:
                    json!({"type": "error", "error": {"type": "not_found_error", "message": path}})
                        .to_string()
                        .into_bytes(),
            }
        };
        write_response(&mut writer, &response, request.close)?;
        if request.close {
            return Ok(());
        }
    }
    Ok(())
}

/// One content block of an answer.
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

fn answer(shared: &Shared, body: &Value) -> Response {
    let (block, stop_reason) = if offers_bash(body) {
        let k = tool_results_in(body);
        match shared.steps.get(k) {
            Some(Step::Bash(command)) => (
                Block::ToolUse {
                    id: format!("toolu_scripted_{k}"),
                    name: "Bash".to_owned(),
                    input: json!({"command": command, "description": format!("scripted step {}", k + 1)}),
                },
                "tool_use",
            ),
            Some(Step::Tool { name, input }) => (
                Block::ToolUse {
                    id: format!("toolu_scripted_{k}"),
                    name: name.clone(),
                    input: input.clone(),
                },
                "tool_use",
            ),
            None => (Block::Text(shared.final_text.clone()), "end_turn"),
        }
    } else {
        (Block::Text("Scripted session".to_owned()), "end_turn")
    };
    let model = body["model"].as_str().unwrap_or("claude-scripted");
    let id = format!("msg_scripted_{}", tool_results_in(body));
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    let (start, delta) = match block {
        Block::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
        Block::ToolUse { id, name, input } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
    };
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": 1}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    let mut stream = String::new();
    for (event, data) in events {
        stream.push_str(&format!("event: {event}\ndata: {data}\n\n"));
    }
    Response {
        status: 200,
        headers: vec![
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache".into()),
            (
                "request-id".into(),
                format!("req_scripted_{}", tool_results_in(body)),
            ),
        ],
        body: stream.into_bytes(),
    }
}
