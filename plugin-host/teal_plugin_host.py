#!/usr/bin/env python3
"""The Python plugin host: upstream teal-agents plugins (`custom_plugins.py`) served as MCP tools.

    python3 teal_plugin_host.py --module /path/custom_plugins.py --plugins WeatherPlugin,MathPlugin

A Model Context Protocol server over stdio (newline-delimited JSON-RPC 2.0), written with the
standard library alone. At start it imports the module by path (its directory first on sys.path,
so the module's imports of sibling files work) and finds the classes named in `--plugins` (the
agent's `plugins:` list). Each of their methods marked with Semantic Kernel's `@kernel_function`
is a tool named `{Plugin}-{function}` (upstream's name, also its HITL catalog key), with a JSON
Schema built from the signature. A module that fails to import, or a plugin it lacks, ends the
host before it reads stdin: exit status 1 and one line on stderr naming the file and the error.

Upstream's plugin contract, per `tools/call`:
- the class is instantiated for the call, `PluginClass(authorization, extra_data_collector)`, as
  upstream does per request; `authorization` is `params._meta.authorization` (the caller's
  Authorization header, as the agent forwards it), else None;
- sync and async functions (a sync one runs on a thread of its own, so the host still answers
  `ping` and other calls meanwhile);
- the result is one text item: a string as is, any other value as JSON text (None as "");
- an exception is a tool result with `isError: true` and the text `{type}: {message}`;
- what the plugin put in its `extra_data_collector` comes back in the result's
  `_meta.extra_data`, in upstream's `ExtraData` shape: `{"items": [{"key": ..., "value": ...}]}`.

Imports of upstream plugins work unchanged: when `semantic_kernel` or `sk_agents` cannot be
imported, small stand-ins are put in sys.modules (`kernel_function`; `BasePlugin`,
`ExtraDataCollector`, `ExtraData`, `ExtraDataElement`, `ExtraDataPartial`). The real packages are
used whenever the interpreter has them.

The protocol owns stdout: anything the plugins print goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import collections.abc
import contextvars
import dataclasses
import datetime
import decimal
import enum
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import threading
import traceback
import types
import typing
import uuid
from pathlib import Path

HOST_NAME = "teal-plugin-host"
HOST_VERSION = "0.1.0"
# Newest first: the answer to an `initialize` that asks for none of these.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# How long calls still running when stdin closes may take to answer before the host exits.
EXIT_GRACE_S = 5


# The `_meta.log_tag` of the call being run: what the plugin writes to stderr meanwhile is tagged
# with it, line by line, so the server logs it with that request's ids.
CALL_TAG: contextvars.ContextVar[str | None] = contextvars.ContextVar("call_tag", default=None)
TAG = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class TaggedStderr:
    """stderr for plugins: each line written during a tagged call starts with `[call:{tag}] `."""

    def __init__(self, stream):
        self.stream = stream
        self.lock = threading.Lock()
        self.partial: dict[str | None, str] = {}

    def write(self, text: str) -> int:
        tag = CALL_TAG.get()
        if tag is None:
            return self.stream.write(text)
        with self.lock:
            buffered = self.partial.pop(tag, "") + text
            *lines, rest = buffered.split("\n")
            for line in lines:
                self.stream.write(f"[call:{tag}] {line}\n")
            if rest:
                # Bounded: a line without an end is written out once it passes 8 KiB.
                if len(rest) > 8192:
                    self.stream.write(f"[call:{tag}] {rest}\n")
                else:
                    self.partial[tag] = rest
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


class StartupError(Exception):
    """Why the host cannot serve: printed as one line on stderr, exit status 1."""


def log(message: str) -> None:
    sys.stderr.write(f"{HOST_NAME}: {message}\n")
    sys.stderr.flush()


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def describe_exception(error: BaseException, module_file: str | None = None) -> str:
    """`Type: message`, and where it was raised: the deepest frame in the plugin's directory."""
    text = f"{type(error).__name__}: {one_line(str(error))}" if str(error) else type(error).__name__
    if isinstance(error, SyntaxError):
        return text  # its message names the file and the line
    where = None
    base = os.path.dirname(module_file) if module_file else None
    for frame in traceback.extract_tb(error.__traceback__):
        if base is None or os.path.abspath(frame.filename).startswith(base + os.sep):
            where = frame
    if where is not None:
        text += f" ({os.path.basename(where.filename)}, line {where.lineno})"
    return text


# ---------------------------------------------------------------------------------------------
# Stand-ins for semantic_kernel and sk_agents
# ---------------------------------------------------------------------------------------------


def kernel_function(func=None, name: str | None = None, description: str | None = None):
    """The stand-in for Semantic Kernel's decorator: marks the function with the same attributes."""

    def mark(f):
        f.__kernel_function__ = True
        f.__kernel_function_name__ = name or getattr(f, "__name__", "unknown")
        f.__kernel_function_description__ = description or inspect.getdoc(f)
        f.__kernel_function_streaming__ = inspect.isasyncgenfunction(f) or inspect.isgeneratorfunction(f)
        return f

    return mark(func) if func is not None else mark


class ExtraDataElement:
    def __init__(self, key: str, value: str):
        self.key = key
        self.value = value

    def model_dump(self) -> dict:
        return {"key": self.key, "value": self.value}


class ExtraData:
    def __init__(self, items: list | None = None):
        self.items = [i if isinstance(i, ExtraDataElement) else ExtraDataElement(**i) for i in items or []]

    def model_dump(self) -> dict:
        return {"items": [i.model_dump() for i in self.items]}


class ExtraDataPartial:
    def __init__(self, extra_data: ExtraData | dict | None = None):
        self.extra_data = ExtraData(**extra_data) if isinstance(extra_data, dict) else extra_data

    @staticmethod
    def new_from_json(json_str: str) -> ExtraDataPartial:
        return ExtraDataPartial(**json.loads(json_str))


class ExtraDataCollector:
    """Upstream's interface: what a plugin adds comes back with the answer."""

    def __init__(self):
        self._extra_data_items: list = []

    def add_extra_data(self, key: str, value: str) -> None:
        self._extra_data_items.append(ExtraDataElement(key=key, value=value))

    def add_extra_data_items(self, extra_data) -> None:
        if extra_data and extra_data.items:
            for item in extra_data.items:
                self.add_extra_data(item.key, item.value)

    def num_items(self) -> int:
        return len(self._extra_data_items)

    def is_empty(self) -> bool:
        return self.num_items() == 0

    def get_extra_data(self):
        return ExtraData(items=self._extra_data_items) if self._extra_data_items else None


class BasePlugin:
    def __init__(self, authorization: str | None = None, extra_data_collector: ExtraDataCollector | None = None):
        self.authorization = authorization
        self.extra_data_collector = extra_data_collector


def _stand_in(name: str, provides: dict, package: bool = False) -> types.ModuleType:
    module = types.ModuleType(name, f"{HOST_NAME}'s stand-in for {name} (the real package is not installed)")
    module.__file__ = __file__
    if package:
        module.__path__ = []
    module.__dict__.update(provides)

    def missing(attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        # An ImportError (not AttributeError) keeps this message in `from X import attr`.
        raise ImportError(
            f"{name} is {HOST_NAME}'s stand-in, without {attr}: install the real package into the Python that runs the host"
        )

    module.__getattr__ = missing
    sys.modules[name] = module
    return module


def _drop(prefix: str) -> None:
    for name in [n for n in sys.modules if n == prefix or n.startswith(prefix + ".")]:
        del sys.modules[name]


def install_stand_ins() -> None:
    """Stand-ins for the packages the interpreter lacks (any failure to import the real one)."""
    try:
        importlib.import_module("semantic_kernel.functions.kernel_function_decorator")
        importlib.import_module("semantic_kernel.functions")
    except Exception:
        _drop("semantic_kernel")
        decorator = {"kernel_function": kernel_function}
        sk = _stand_in("semantic_kernel", {}, package=True)
        sk.functions = _stand_in("semantic_kernel.functions", decorator, package=True)
        sk.functions.kernel_function_decorator = _stand_in("semantic_kernel.functions.kernel_function_decorator", decorator)
    try:
        importlib.import_module("sk_agents.ska_types")
    except Exception:
        _drop("sk_agents")
        extra = {
            "ExtraDataElement": ExtraDataElement,
            "ExtraData": ExtraData,
            "ExtraDataPartial": ExtraDataPartial,
            "ExtraDataCollector": ExtraDataCollector,
        }
        ska = _stand_in("sk_agents", {}, package=True)
        ska.extra_data_collector = _stand_in("sk_agents.extra_data_collector", extra)
        ska.ska_types = _stand_in("sk_agents.ska_types", {**extra, "BasePlugin": BasePlugin})


def new_collector():
    """Upstream's collector class when sk_agents is installed, else the stand-in."""
    cls = getattr(sys.modules.get("sk_agents.ska_types"), "ExtraDataCollector", None)
    return (cls or ExtraDataCollector)()


def collected(collector) -> dict | None:
    data = collector.get_extra_data() if collector is not None else None
    items = getattr(data, "items", None) if data is not None else None
    if not items:
        return None
    return {"items": [{"key": getattr(i, "key", None), "value": getattr(i, "value", None)} for i in items]}


# ---------------------------------------------------------------------------------------------
# JSON Schema of a signature, and arguments converted back to the annotated types
# ---------------------------------------------------------------------------------------------

NoneType = type(None)
UNION_TYPES = tuple(t for t in (typing.Union, getattr(types, "UnionType", None)) if t is not None)
SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", NoneType: "null"}


def strip_annotated(tp) -> tuple[object, str | None]:
    """`Annotated[T, "description", ...]` → (T, "description")."""
    description = None
    while typing.get_origin(tp) is typing.Annotated:
        for meta in tp.__metadata__:
            if isinstance(meta, str) and description is None:
                description = meta
        tp = tp.__origin__
    return tp, description


def is_model(tp) -> bool:
    """A pydantic model class (v2 or v1), found by its methods: pydantic itself is never required."""
    return isinstance(tp, type) and (hasattr(tp, "model_json_schema") or (hasattr(tp, "schema") and hasattr(tp, "parse_obj")))


def json_type_of(values: list) -> str | None:
    kinds = {SIMPLE.get(type(v)) for v in values}
    return kinds.pop() if len(kinds) == 1 and None not in kinds else None


def schema_of(tp) -> dict:
    tp, description = strip_annotated(tp)
    schema = _schema_of(tp)
    if description:
        schema = {**schema, "description": description}
    return schema


def _schema_of(tp) -> dict:
    if tp is inspect.Parameter.empty or tp is typing.Any or tp is object:
        return {}
    if isinstance(tp, type) and tp in SIMPLE:
        return {"type": SIMPLE[tp]}
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in UNION_TYPES:
        others = [a for a in args if a is not NoneType]
        if len(others) == 1:
            schema = schema_of(others[0])
        else:
            schema = {"anyOf": [schema_of(a) for a in others]}
        if NoneType in args:
            if isinstance(schema.get("type"), str) and "enum" not in schema:
                schema = {**schema, "type": [schema["type"], "null"]}
            else:
                schema = {"anyOf": [schema, {"type": "null"}]}
        return schema
    if origin is typing.Literal:
        values = list(args)
        kind = json_type_of(values)
        return {"type": kind, "enum": values} if kind else {"enum": values}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        kind = json_type_of(values)
        return {"type": kind, "enum": values} if kind else {"enum": values}
    if is_model(tp):
        return tp.model_json_schema() if hasattr(tp, "model_json_schema") else tp.schema()
    container = origin or tp
    if container in (list, tuple, set, frozenset) or (
        isinstance(container, type) and issubclass(container, (collections.abc.Sequence, collections.abc.Set)) and container is not str
    ):
        if container is tuple and len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],)
        if container is tuple and len(args) > 1:
            return {"type": "array", "prefixItems": [schema_of(a) for a in args], "minItems": len(args), "maxItems": len(args)}
        return {"type": "array", "items": schema_of(args[0])} if args else {"type": "array"}
    if container is dict or (isinstance(container, type) and issubclass(container, collections.abc.Mapping)):
        if len(args) == 2 and args[1] not in (typing.Any, object):
            return {"type": "object", "additionalProperties": schema_of(args[1])}
        return {"type": "object"}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return object_schema(list(inspect.signature(tp).parameters.values()), hints_of(tp))
    if tp is datetime.datetime:
        return {"type": "string", "format": "date-time"}
    if tp is datetime.date:
        return {"type": "string", "format": "date"}
    return {}


def hints_of(target) -> dict:
    """Resolved annotations (also under `from __future__ import annotations`), else the raw ones."""
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        return dict(getattr(target, "__annotations__", {}) or {})


def object_schema(params: list[inspect.Parameter], hints: dict) -> dict:
    properties, required = {}, []
    for p in params:
        schema = schema_of(hints.get(p.name, p.annotation))
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        elif p.default is not None:
            default = p.default.value if isinstance(p.default, enum.Enum) else p.default
            try:
                json.dumps(default)
                schema = {**schema, "default": default}
            except (TypeError, ValueError):
                pass
        properties[p.name] = schema
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def convert(value, tp):
    """A JSON value turned into the annotated type where it differs (enums, models, numbers)."""
    tp, _ = strip_annotated(tp)
    if value is None or tp in (inspect.Parameter.empty, typing.Any, object):
        return value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in UNION_TYPES:
        for a in args:
            if a is NoneType:
                continue
            try:
                return convert(value, a)
            except Exception:
                continue
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        if isinstance(value, tp):
            return value
        try:
            return tp(value)
        except ValueError:
            if isinstance(value, str) and value in tp.__members__:
                return tp[value]
            raise ValueError(f"{value!r} is not one of {[m.value for m in tp]}") from None
    if is_model(tp):
        if isinstance(value, tp):
            return value
        return tp.model_validate(value) if hasattr(tp, "model_validate") else tp.parse_obj(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) and isinstance(value, dict):
        hints = hints_of(tp)
        return tp(**{k: convert(v, hints.get(k, typing.Any)) for k, v in value.items()})
    container = origin or tp
    if isinstance(value, list) and container in (list, tuple, set, frozenset):
        if args and not (container is tuple and len(args) > 1 and args[-1] is not Ellipsis):
            value = [convert(v, args[0]) for v in value]
        elif container is tuple and args:
            value = [convert(v, a) for v, a in zip(value, args)]
        return container(value)
    if isinstance(value, dict) and container is dict and len(args) == 2:
        return {k: convert(v, args[1]) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------
# Plugins and their tools
# ---------------------------------------------------------------------------------------------


class Tool:
    def __init__(self, plugin: str, cls: type, attr: str, func):
        self.plugin_class = cls
        self.attr = attr
        self.function = getattr(func, "__kernel_function_name__", None) or attr
        self.name = f"{plugin}-{self.function}"
        self.description = getattr(func, "__kernel_function_description__", None) or ""
        signature = inspect.signature(func)
        hints = hints_of(func)
        params = list(signature.parameters.values())
        if params and params[0].name in ("self", "cls") and not isinstance(inspect.getattr_static(cls, attr), staticmethod):
            params = params[1:]
        self.variadic = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        self.params = [p for p in params if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
        self.hints = hints
        self.input_schema = object_schema(self.params, hints)

    def listing(self) -> dict:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}

    def arguments(self, given: dict) -> tuple[list, dict]:
        args, kwargs = [], {}
        known = set()
        for p in self.params:
            known.add(p.name)
            if p.name not in given:
                if p.default is inspect.Parameter.empty:
                    raise TypeError(f"missing required argument: {p.name}")
                continue
            try:
                value = convert(given[p.name], self.hints.get(p.name, p.annotation))
            except Exception as e:
                raise TypeError(f"argument {p.name}: {one_line(str(e))}") from None
            if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[p.name] = value
        if self.variadic:
            kwargs.update({k: v for k, v in given.items() if k not in known})
        return args, kwargs


def load_module(path: str) -> types.ModuleType:
    file = Path(path).resolve()
    if not file.is_file():
        raise StartupError(f"cannot import {file}: no such file")
    directory = str(file.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = file.stem
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise StartupError(f"cannot import {file}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001 (SystemExit too: the module must not end the host silently)
        sys.modules.pop(name, None)
        raise StartupError(f"cannot import {file}: {describe_exception(e, str(file))}") from None
    return module


def find_tools(module: types.ModuleType, plugins: list[str]) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    file = getattr(module, "__file__", module.__name__)
    for plugin in plugins:
        cls = getattr(module, plugin, None)
        if not isinstance(cls, type):
            raise StartupError(f"{file}: plugin {plugin} not found (no class of that name in the module)")
        for attr, member in inspect.getmembers(cls):
            func = getattr(member, "__func__", member)
            if not callable(func) or not getattr(func, "__kernel_function__", False):
                continue
            try:
                tool = Tool(plugin, cls, attr, func)
            except Exception as e:
                raise StartupError(f"{file}: {plugin}.{attr}: {describe_exception(e)}") from None
            if tool.name in tools:
                raise StartupError(f"{file}: two functions of {plugin} are named {tool.function}")
            tools[tool.name] = tool
    return tools


def as_text(value) -> str:
    """Upstream's tool result: a string as is, any other value as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, default=_jsonable)


def _jsonable(value):
    if hasattr(value, "model_dump") and callable(value.model_dump):
        return value.model_dump(mode="json") if "mode" in inspect.signature(value.model_dump).parameters else value.model_dump()
    if hasattr(value, "dict") and hasattr(value, "json") and is_model(type(value)):
        return value.dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


async def in_thread(func, *args, **kwargs):
    """A sync plugin function on a daemon thread: a hung one does not keep the host alive at exit."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(error, result):
        if not future.done():
            future.set_exception(error) if error is not None else future.set_result(result)

    def run():
        try:
            result = func(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 (handed to the awaiting call)
            loop.call_soon_threadsafe(settle, e, None)
        else:
            loop.call_soon_threadsafe(settle, None, result)

    # The thread runs in the call's context, so what it prints carries the call's tag.
    ctx = contextvars.copy_context()
    threading.Thread(target=ctx.run, args=(run,), name="plugin-call", daemon=True).start()
    return await future


async def invoke(tool: Tool, arguments: dict, authorization: str | None) -> dict:
    collector = new_collector()
    try:
        args, kwargs = tool.arguments(arguments)
        instance = tool.plugin_class(authorization, collector)
        method = getattr(instance, tool.attr)
        if inspect.iscoroutinefunction(method):
            value = await method(*args, **kwargs)
        elif inspect.isasyncgenfunction(method):
            value = [chunk async for chunk in method(*args, **kwargs)]
        else:
            value = await in_thread(method, *args, **kwargs)
            if inspect.isawaitable(value):
                value = await value
            elif inspect.isgenerator(value):
                value = await in_thread(list, value)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value) and tool_streams(tool):
            value = "".join(value)
        result = {"content": [{"type": "text", "text": as_text(value)}]}
    except asyncio.CancelledError:
        raise
    except (Exception, SystemExit, KeyboardInterrupt) as e:  # a plugin's sys.exit() ends its call, not the host
        log(f"{tool.name} raised {describe_exception(e, getattr(sys.modules.get(tool.plugin_class.__module__), '__file__', None))}")
        message = one_line(str(e))
        result = {"content": [{"type": "text", "text": f"{type(e).__name__}: {message}" if message else type(e).__name__}], "isError": True}
    extra = collected(collector)
    if extra:
        result["_meta"] = {"extra_data": extra}
    return result


def tool_streams(tool: Tool) -> bool:
    func = getattr(tool.plugin_class, tool.attr)
    func = getattr(func, "__func__", func)
    return inspect.isasyncgenfunction(func) or inspect.isgeneratorfunction(func)


# ---------------------------------------------------------------------------------------------
# The MCP server over stdio
# ---------------------------------------------------------------------------------------------


class Server:
    def __init__(self, tools: dict[str, Tool], out):
        self.tools = tools
        self.out = out  # the real stdout, binary
        self.calls: dict[object, asyncio.Task] = {}

    def send(self, message: dict) -> None:
        self.out.write(json.dumps(message, ensure_ascii=False, default=_jsonable).encode("utf-8") + b"\n")
        self.out.flush()

    def answer(self, id_, result: dict) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "result": result})

    def error(self, id_, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})

    def receive(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError as e:
            self.error(None, PARSE_ERROR, f"Parse error: {e}")
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.error(message.get("id") if isinstance(message, dict) else None, INVALID_REQUEST, "Invalid Request")
            return
        method = message.get("method")
        if method is None:
            return  # a response: this server sends no requests
        params = message.get("params") or {}
        if "id" not in message:
            self.notified(method, params)
            return
        id_ = message["id"]
        if not isinstance(method, str) or not isinstance(params, dict):
            self.error(id_, INVALID_REQUEST, "Invalid Request")
        elif method == "initialize":
            self.answer(id_, self.initialize(params))
        elif method == "ping":
            self.answer(id_, {})
        elif method == "tools/list":
            self.answer(id_, {"tools": [t.listing() for t in self.tools.values()]})
        elif method == "tools/call":
            self.call(id_, params)
        else:
            self.error(id_, METHOD_NOT_FOUND, f"Method not found: {method}")

    def notified(self, method, params: dict) -> None:
        if method == "notifications/cancelled":
            task = self.calls.pop(params.get("requestId"), None)
            if task is not None:
                task.cancel()
        # notifications/initialized and any other notification need nothing.

    def initialize(self, params: dict) -> dict:
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": HOST_NAME, "version": HOST_VERSION},
        }

    def call(self, id_, params: dict) -> None:
        name = params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            self.error(id_, INVALID_PARAMS, f"Unknown tool: {name}")
            return
        arguments = params.get("arguments") or {}
        meta = params.get("_meta") or {}
        authorization = meta.get("authorization") if isinstance(meta, dict) else None
        if not isinstance(arguments, dict):
            self.error(id_, INVALID_PARAMS, "arguments must be an object")
            return
        if authorization is not None and not isinstance(authorization, str):
            self.error(id_, INVALID_PARAMS, "_meta.authorization must be a string")
            return
        tag = meta.get("log_tag") if isinstance(meta, dict) else None

        async def run():
            if isinstance(tag, str) and TAG.match(tag):
                CALL_TAG.set(tag)
            try:
                result = await invoke(tool, arguments, authorization)
            except asyncio.CancelledError:
                return  # canceled by the client: no answer, as the protocol asks
            except Exception as e:  # the host's own fault, not the plugin's
                self.error(id_, INTERNAL_ERROR, describe_exception(e))
            else:
                self.answer(id_, result)
            finally:
                if self.calls.get(id_) is task:
                    del self.calls[id_]

        task = asyncio.get_running_loop().create_task(run())
        self.calls[id_] = task

    async def serve(self, stdin) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue = asyncio.Queue()

        def read():
            for line in stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read, name="stdin", daemon=True).start()
        while (line := await lines.get()) is not None:
            self.receive(line)
        # stdin closed: the client is done. Calls still running get EXIT_GRACE_S to answer.
        pending = list(self.calls.values())
        if pending:
            _, late = await asyncio.wait(pending, timeout=EXIT_GRACE_S)
            if late:
                log(f"stdin closed; {len(late)} call(s) still running are abandoned")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=HOST_NAME, description="Upstream teal-agents Python plugins as MCP tools over stdio.")
    parser.add_argument("--module", required=True, help="the plugin module's file (custom_plugins.py)")
    parser.add_argument("--plugins", required=True, help="the plugin class names, comma-separated (the agent's plugins: list)")
    parser.add_argument("--check", action="store_true", help="import and list, print the tool names as a JSON array, exit 0 (the server's boot check)")
    options = parser.parse_args(argv)
    plugins = [p.strip() for p in options.plugins.split(",") if p.strip()]

    # The protocol owns stdout; whatever the plugins print goes to stderr.
    out = sys.stdout.buffer
    sys.stderr = TaggedStderr(sys.stderr)
    sys.stdout = sys.stderr
    # No __pycache__ written beside the plugins (a config directory may be read-only, or a
    # checkout); compiled files already there are still read.
    sys.dont_write_bytecode = True
    try:
        install_stand_ins()
        module = load_module(options.module)
        tools = find_tools(module, plugins)
    except StartupError as e:
        log(one_line(str(e)))
        return 1
    if options.check:
        out.write(json.dumps(sorted(tools)).encode("utf-8") + b"\n")
        out.flush()
        return 0

    server = Server(tools, out)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(server.serve(sys.stdin.buffer))
    except KeyboardInterrupt:
        pass
    out.flush()
    sys.stderr.flush()
    # Calls that ignored their cancellation (and sync ones on their threads) do not hold the exit.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
