"""The FAQ's error catalogue, from the code: an ``ast`` walk over evalscope_niah collecting every error a user can meet
(each ``NiahConfigError(param, message)``, each raised ValueError of a validator, the local model's and the
server's errors, the ``*_message`` lines a run prints when it stops or warns), with the parameter it names and its
message as the code builds it (f-string parts as ``{placeholders}``, module constants and message helpers filled
in), grouped by what the user was doing. Loaded by path by generated_pages.py (the ``errors`` section).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / 'evalscope_niah'


# Error types a user meets, and the parameter each is about when the call does not name one.
CONFIG_ERRORS = ('NiahConfigError',)
FIXED_PARAM = {'EndpointError': 'tokenizer_path'}
# Raised for programming mistakes, not for anything a user gives: left out of the catalogue.
INTERNAL_ERRORS = {'TypeError', 'AssertionError', 'NotImplementedError', 'AttributeError', 'RuntimeError'}
# What the user was doing, by the module that raises (first prefix that matches wins).
GROUPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ('judge', 'The judge check', '裁判模型检查', ('judging/', 'integration/judge')),
    (
        'resume',
        'Stopping and resuming a run',
        '中断与断点续评',
        ('making/resume_match.py', 'integration/resume_cache.py', 'integration/interrupt.py', 'torn_lines'),
    ),
    ('window', "The model's window", '模型窗口', ('making/window_fit.py', 'integration/window_check.py')),
    (
        'tokenizer',
        'Tokenizer and server counts',
        '分词器与服务端计数',
        ('making/tokenization.py', 'making/haystack.py', 'serving/endpoint.py', 'serving/token_bytes.py'),
    ),
    ('corpus', 'Corpus and needle files', '语料与针文件', ('making/', 'tasks/single/bank.py')),
    ('plugins', 'Tasks and plugins', '任务与插件', ('tasks/registry.py', 'tasks/plugins.py', 'tasks/base.py')),
    ('server', 'Server faults and the local model', '服务端故障与本地模型', ('serving/', 'integration/')),
    ('disk', 'Disk and the work dir', '磁盘与工作目录', ('disk_space.py', 'work_dir_lock.py', 'atomic.py')),
    ('reading', 'Reports, plotting and comparing result files', '报告、绘图与比较结果文件', ('reporting/',)),
    ('cli', 'Command-line flags', '命令行参数', ('cli.py', 'demo.py')),
    ('config', 'Parameters (extra_params, dataset_args)', '参数（extra_params、dataset_args）', ('',)),
)

# What to do, for each group: most messages carry their own fix; this is the way out they share.
FIXES: dict[str, tuple[str, str]] = {
    'judge': (
        "Fix the judge (model_id, api_url, key, a stronger model), or judge_check: 'fallback' (rule scores when the "
        "judge fails), or judge={'strategy': 'rule'}; needle_haystack_judge_check.json holds every item.",
        '修好裁判模型（model_id、api_url、密钥，或换更强的模型），'
        "或者用 judge_check: 'fallback'（裁判模型失败时用规则分数），或者用 judge={'strategy': 'rule'}；"
        'needle_haystack_judge_check.json 记录每一项。',
    ),
    'resume': (
        'Resume only with the inputs the cached run used, or run fresh in a new work dir; rename old cache folders '
        'as the message says.',
        '只用缓存那次运行所用的输入断点续评，或者在新的工作目录中重新运行；按消息所说重命名旧的缓存文件夹。',
    ),
    'window': (
        "Drop the lengths that do not fit, or count lengths in the model's own tokens (tokenizer_path: 'server').",
        "去掉放不下的长度，或者按模型自己的 token 计数（tokenizer_path: 'server'）。",
    ),
    'tokenizer': (
        "Give a local tokenizer directory, a Qwen3 id or 'tiktoken:cl100k_base'; for 'server', a vLLM or llama.cpp "
        'server with its tokenize API.',
        "给出本地分词器目录、Qwen3 的 id 或 'tiktoken:cl100k_base'；用 'server' 时，需要带 tokenize API 的 vLLM 或 "
        'llama.cpp 服务端。',
    ),
    'corpus': (
        'Check local_path and the corpus or needle file the message names (UTF-8, the layout it states, within the '
        'size caps).',
        '检查 local_path 以及消息指出的语料或 needle 文件（UTF-8、消息所述的格式、不超过大小上限）。',
    ),
    'plugins': (
        'Use a task name the message lists; evalscope-niah doctor says why a plugin did not load.',
        '使用消息列出的任务名；evalscope-niah doctor 会说明插件为何没有加载。',
    ),
    'server': (
        'A server fault is an error, never a score: check the server, then resume with --use-cache to retry.',
        '服务端故障记为错误，绝不计分：检查服务端，然后用 --use-cache 断点续评以重试。',
    ),
    'disk': (
        'Free space, or wait for the other run (or give this one another work dir), then resume with --use-cache.',
        '腾出空间，或者等另一个运行结束（或给本次运行另一个工作目录），然后用 --use-cache 断点续评。',
    ),
    'reading': (
        "plot and compare read the files a run wrote, as it wrote them: point them at a run's work dir, or re-run "
        'a file that was edited or cut; the warnings say what to change in the next run.',
        'plot 和 compare 按运行写出的原样读取文件：让它们指向运行的工作目录，或者重新运行被编辑或截断的文件；'
        '警告会说明下一次运行应当改什么。',
    ),
    'cli': ('Give the flag a value the message allows.', '给该命令行参数一个消息所允许的值。'),
    'config': (
        'Write the parameter as the message says; evalscope-niah doctor checks a whole config offline.',
        '按消息所说写该参数；evalscope-niah doctor 可离线检查整个配置。',
    ),
}


@dataclass(frozen=True)
class RaisedError:
    module: str  # path under evalscope_niah/
    kind: str  # the error type
    param: str  # the parameter named (a template, with {placeholders} where the code computes it)
    message: str  # the message template


# A helper that builds a message: its definition and the text constants of its module.
Helper = tuple[ast.FunctionDef, dict[str, ast.expr]]


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """The module's top-level text and number constants (``_WAYS_OUT = '...'``): a message quoting one shows it."""
    return {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant | ast.JoinedStr)
        and not (isinstance(node.value, ast.Constant) and type(node.value.value) not in (str, int, float))
    }


def _text_tables(trees: Iterable[ast.Module]) -> dict[str, dict[str, str]]:
    """Module-level dicts of texts (``REFUSED = {'evaluator': '...'}``) defined once in the package: a message that
    looks one up says one of its texts."""
    found: dict[str, list[dict[str, str]]] = {}
    for tree in trees:
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, 'target', None)
            if isinstance(value, ast.Dict) and isinstance(target, ast.Name) and value.keys:
                texts = {
                    key.value: _template(text, {}, _constants(tree))[0]
                    for key, text in zip(value.keys, value.values, strict=True)
                    if isinstance(key, ast.Constant) and isinstance(key.value, str)
                    if isinstance(text, ast.Constant | ast.JoinedStr | ast.BinOp)
                }
                if len(texts) == len(value.keys):
                    found.setdefault(target.id, []).append(texts)
    return {name: tables[0] for name, tables in found.items() if len(tables) == 1}


def _table_entries(error: RaisedError, tables: dict[str, dict[str, str]]) -> list[RaisedError]:
    """``error`` once per text of a table its message looks up (``REFUSED[name]``), the parameter named by the key
    where the message is looked up by the parameter's own name; else ``error`` as it is."""
    for match in PLACEHOLDER.finditer(error.message):
        name, _, index = match.group(1).partition('[')
        if name in tables and index.endswith(']'):
            keyed = error.param in (OPEN + index[:-1] + CLOSE, OPEN + index[:-1] + '!r' + CLOSE)
            return [
                RaisedError(
                    error.module, error.kind, key if keyed else error.param, error.message.replace(match.group(0), text)
                )
                for key, text in tables[name].items()
            ]
    return [error]


def _locals(function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> dict[str, ast.expr]:
    """The text a function's local names hold where the code says it once: ``message = f'...'`` assigned a single
    time (not built from itself), and a parameter's default (``ways_out: str = _WAYS_OUT``)."""
    if function is None:
        return {}
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).extend([node.value, node.value])  # reassigned: not one text
    texts = {
        name: values[0]
        for name, values in found.items()
        if len(values) == 1
        and isinstance(values[0], ast.Constant | ast.JoinedStr | ast.BinOp)
        and not any(isinstance(inner, ast.Name) and inner.id == name for inner in ast.walk(values[0]))
    }
    arguments = function.args
    positional = arguments.posonlyargs + arguments.args
    defaults = dict(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True))
    defaults = {argument.arg: value for argument, value in defaults.items()}
    defaults |= {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None}
    return {**{name: value for name, value in defaults.items() if isinstance(value, ast.Name | ast.Constant)}, **texts}


# A placeholder in a template: what the code computes there, between two private-use characters (a message may hold
# literal braces: a JSON example such as {'strategy': 'rule'}).
OPEN, CLOSE = '\ue000', '\ue001'
PLACEHOLDER = re.compile(f'{OPEN}(.*?){CLOSE}')
GOT = f' (got {OPEN}value!r{CLOSE})'


def _placeholder(node: ast.expr, constants: dict[str, ast.expr], conversion: int = -1) -> str:
    if isinstance(node, ast.Name) and node.id in constants:
        value = constants[node.id]
        if isinstance(value, ast.Constant) and isinstance(value.value, int):
            return f'{value.value:,}'
        if isinstance(value, ast.Constant) and isinstance(value.value, float):
            return f'{value.value:g}'
        if isinstance(value, ast.Name) and value.id == node.id:
            return OPEN + node.id + CLOSE
        inner = {name: text for name, text in constants.items() if name != node.id}  # no loop through a name
        text = _template(value, {}, inner)[0]
        return repr(text) if conversion == ord('r') and OPEN not in text else text
    return OPEN + ast.unparse(node) + ('!r' if conversion == ord('r') else '') + CLOSE


def _template(node: ast.expr, helpers: dict[str, Helper], constants: dict[str, ast.expr]) -> list[str]:
    """The text(s) a message expression builds: f-string parts as {placeholders}, a module constant's text, a
    helper's returned texts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        parts = [
            part.value if isinstance(part, ast.Constant) else _placeholder(part.value, constants, part.conversion)
            for part in node.values
        ]
        return [''.join(parts)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [
            left + right
            for left in _template(node.left, helpers, constants)
            for right in _template(node.right, helpers, constants)
        ]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
        function, own = helpers[node.func.id]
        returned = [
            text
            for child in ast.walk(function)
            if isinstance(child, ast.Return)
            and child.value is not None
            and not (isinstance(child.value, ast.Constant) and child.value.value is None)
            for text in _template(child.value, {}, {**own, **_locals(function)})
        ]
        if returned:
            return returned
    return [_placeholder(node, constants)]


def _validated_fields(function: ast.FunctionDef | None) -> str | None:
    """The fields a pydantic ``@field_validator('a', 'b')`` checks: its ValueError reaches the user under them."""
    for decorator in function.decorator_list if function else ():
        if isinstance(decorator, ast.Call) and getattr(decorator.func, 'id', '') == 'field_validator':
            names = [arg.value for arg in decorator.args if isinstance(arg, ast.Constant)]
            return ', '.join(names)
    return None


def _checked_for(trees: Iterable[ast.Module]) -> dict[str, str]:
    """function name -> the fields of the validator that calls it (``check_max_reply_bytes`` -> ``max_reply_bytes``):
    a ValueError it raises reaches the user under those fields."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            fields = _validated_fields(node) if isinstance(node, ast.FunctionDef) else None
            for call in ast.walk(node) if fields else ():
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                    found[call.func.id] = fields
    return found


def _calls(tree: ast.Module) -> Iterator[tuple[ast.Call, ast.FunctionDef | None, bool]]:
    """Every call in the module, with its enclosing function and whether it is what a ``raise`` raises."""
    raised = {id(node.exc) for node in ast.walk(tree) if isinstance(node, ast.Raise) and node.exc is not None}

    def visit(
        node: ast.AST, function: ast.FunctionDef | None
    ) -> Iterator[tuple[ast.Call, ast.FunctionDef | None, bool]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            if isinstance(child, ast.Call):
                yield child, function, id(child) in raised
            yield from visit(child, inner)

    yield from visit(tree, None)


def _module_errors(
    path: Path, tree: ast.Module, shared: dict[str, Helper], imported: dict[str, ast.expr], checked: dict[str, str]
) -> Iterator[RaisedError]:
    """The errors ``path`` raises (a message built by a helper: the helper's texts, this module's own first), then
    the messages its public ``*_message`` functions build (what a run prints when it stops or warns). ``imported``:
    the package's constants, for a name the module imports (``MAX_GRID_AXIS``)."""
    constants = {**imported, **_constants(tree)}
    own = {node.name: (node, constants) for node in tree.body if isinstance(node, ast.FunctionDef)}
    helpers = {**shared, **own}
    module = path.relative_to(PACKAGE).as_posix()
    for name in own:
        if name.endswith('_message') and not name.startswith('_'):
            call = ast.Call(func=ast.Name(id=name), args=[], keywords=[])
            for text in _template(call, helpers, constants):
                yield RaisedError(module, 'message', name.removesuffix('_message'), text)
    for call, function, is_raised in _calls(tree):
        kind = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, 'attr', '')
        if not kind.endswith('Error') or kind in INTERNAL_ERRORS or not call.args:
            continue
        if kind in CONFIG_ERRORS and len(call.args) == 2:
            params, message = _template(call.args[0], {}, constants), call.args[1]
        elif is_raised and kind not in CONFIG_ERRORS:
            called = checked.get(function.name) if function else None
            params, message = [FIXED_PARAM.get(kind) or _validated_fields(function) or called or kind], call.args[0]
        else:
            continue
        # A validator's error reaches the user through tasks/compose.py's _validated, which adds the value given.
        validated = kind == 'ValueError' and (params[0] != kind or module.startswith('params/'))
        for text in _template(message, helpers, {**constants, **_locals(function)}):
            yield RaisedError(module, kind, params[0], text + (GOT if validated else ''))


def raised_errors() -> list[RaisedError]:
    """Every error message a user can meet, from the code (the test server's own errors are not the user's)."""
    trees = {
        path: ast.parse(path.read_text(encoding='utf-8'))
        for path in sorted(PACKAGE.rglob('*.py'))
        if 'testing' not in path.relative_to(PACKAGE).parts
    }
    # Public helpers that build a message, wherever they live (a module may raise what another module words).
    shared = {
        node.name: (node, _constants(tree))
        for tree in trees.values()
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.endswith('_message')
    }
    # A constant's name defined in one module only: an import of it can only mean that one.
    defined: dict[str, list[ast.expr]] = {}
    for tree in trees.values():
        for name, value in _constants(tree).items():
            defined.setdefault(name, []).append(value)
    imported = {name: values[0] for name, values in defined.items() if len(values) == 1}
    checked = _checked_for(trees.values())
    tables = _text_tables(trees.values())
    found: list[RaisedError] = []
    for path, tree in trees.items():
        for error in _module_errors(path, tree, shared, imported, checked):
            found.extend(expanded for expanded in _table_entries(error, tables) if reachable(expanded))
    found += [*judge_failure_errors(), *pydantic_errors()]
    raised = {error.message for error in found if error.kind != 'message'}
    # A message function whose text an error already carries is listed once, under the error.
    return [error for error in found if error.kind != 'message' or error.message not in raised]


# ---- the messages as a user sees them ------------------------------------------------------------------------------

# Checks that no configuration, file or server can reach: they guard the package's own calls (a programming mistake
# would trip them), so the catalogue leaves them out. (module, start of the message) -> why.
UNREACHABLE: dict[tuple[str, str], str] = {
    ('judging/qualification.py', OPEN + 'len(replies)'): 'the check asks one reply per item it built',
    ('judging/qualification.py', OPEN + 'len(failures)'): 'the check records one failure slot per item',
    ('making/haystack.py', 'needle_depths holds'): 'the sampler places one depth per needle',
    ('scoring/recall.py', 'needles must not be empty'): 'a sample always has its needles',
    ('scoring/cdme.py', 'keyword must contain'): 'keywords come from validated needles',
    ('serving/local_model.py', 'need n_ctx'): 'the demo starts the server with fixed sizes',
    ('serving/local_router.py', 'worker_urls must name'): 'the test router is started with its replicas',
    ('serving/local_router.py', 'policy must be one of'): 'the router policy is validated with the params',
    ('serving/ordering.py', 'concurrency must be'): 'eval_batch_size is validated by EvalScope first',
    ('tasks/base.py', 'sample of task'): 'every built sample has its answer key',
    ('tasks/multi_retrieval/rules.py', 'values must not be empty'): 'a multi-needle sample always has values',
    ('reporting/labels.py', 'unit must be 1000 or 1024'): 'the unit is fixed in the code',
    ('reporting/outputs.py', 'output prefix must be one of'): 'the prefix is the benchmark name run',
    ('reporting/sample_record.py', 'limit must leave room'): 'the cut limit is a constant',
    ('reporting/stats.py', 'agreement scores must be finite'): 'scores are validated when a result is read',
    ('reporting/estimate.py', 'max_output_tokens and'): '--max-tokens is refused below 1 first',
}


def reachable(error: RaisedError) -> bool:
    return not any(error.module == module and error.message.startswith(start) for module, start in UNREACHABLE)


# An example value for what the code computes, so each message reads as printed. First the whole expression, then
# the last name in it (``self.subset.name`` -> ``name``), then its kind (a count, a list, a path).
EXAMPLES: dict[str, str] = {
    'result.failure.describe()': 'judge server unreachable at http://127.0.0.1:8001/v1 (connection refused)',
    'item.failure.describe()': 'judge server unreachable at http://127.0.0.1:8001/v1 (connection refused)',
    'result.failure.fix': "check the judge's api_url (http://127.0.0.1:8001/v1): a server must be running there",
    '_local_context() - ANSWER_TOKENS': '1984',
    'judge_name': "'qwen-plus'",
    'source': 'max_model_len of model qwen2.5-7b-instruct',
    'counted_by': 'Qwen/Qwen3-0.6B',
    'too_long': '[32000, 64000]',
    'where': 'PaulGraham_Essays.txt',
    'tokenizer.name': 'Qwen/Qwen3-8B',
    'subset.corpus_param': 'subsets.english.corpus_file',
    'subset.corpus_file': 'PaulGraham_Essays.txt',
    "buffers[0] if buffers else 'context_lengths'": 'context_lengths',
    'cls.name': 'my_task',
    'value.name': 'found',
    'task.name': 'multi_retrieval',
    'owner.__name__': 'MyTask',
    'lower': ', or lower max_tokens',
    'shown': 'a english prompt of 32000 tokens by Qwen/Qwen3-0.6B is 33412 by the server',
    'work_dir': 'outputs/20261128_093000',
    'cache_dir': 'outputs/20261128_093000/predictions/qwen2.5-7b-instruct',
    'task_config.work_dir': 'outputs/20261128_093000',
    'resuming': '--use-cache outputs/20261128_093000',
    'exc': 'Expecting value: line 1 column 1 (char 0)',
    'corpus_location': '/data/Needle-in-a-Haystack-Corpus',
    'tokenizer_path': 'Qwen/Qwen3-8B',
    'self.root': 'http://127.0.0.1:8000',
    'url': 'http://127.0.0.1:8000/v1',
    'what': 'model',
    'model': 'qwen2.5-7b-instruct',
    'model_id': 'qwen2.5-7b-instruct',
    'message': 'the chat template raised an error',
    'detail': 'connection refused',
    'status': '404',
    'language': 'fr',
    'window': '32768',
    'budget': '4096',
    'context_length': '32000',
    'max_context_length': '128000',
    'self.context_lengths_min': '16000',
    'self.context_lengths_max': '8000',
    'line_no': '12',
    'reader.line_num': '12',
    'row.line': '12',
}
_NUMBER_NAMES = re.compile(
    r'^(len|count|n|total|size|number|budget|window|line|line_no|line_num|lineno|colno|attempt|start|counted|ids|'
    r'pieces|depths|lengths|corpus_tokens|context_length|max_context_length|actual|high|low|median|failed|'
    r'max_corpus_repeats|decided_right|prompt_tokens|st_size|digest|deadline_s|number)$'
)
_NAME_EXAMPLES = {
    'subset': 'english',
    'name': 'context_lengths',
    'param': 'context_lengths',
    'key': 'context_lenghts',
    'field': 'context_lenghts',
    'alias': 'lengths',
    'canonical': 'context_lengths',
    'task': 'multi_retrieval',
    'path': 'outputs/run/reports/qwen2.5-7b-instruct/needle_haystack_results.jsonl',
    'directory': '/data/Needle-in-a-Haystack-Corpus',
    'root': 'http://127.0.0.1:8000',
    'corpus_file': 'PaulGraham_Essays.txt',
    'text': 'sideways',
    'value': 'sideways',
    'values': 'sideways',
    'mode': 'sideways',
    'tag': '4kk',
    'tool': 'inspect_evals',
    'role': 'assistant',
    'reason': 'a reply with no rating',
    'problem': 'no rating in the reply',
    'problems': 'no rating in the reply',
}


# Where a module's messages mean something else by a name: (module, expression) -> example.
MODULE_EXAMPLES: dict[tuple[str, str], str] = {
    ('making/window_fit.py', 'where'): 'english [32000, 64000]',
    ('serving/local_model.py', 'path'): '/models/SmolLM2-135M-Instruct.Q4_1.gguf',
    ('tasks/single/bank.py', 'path'): 'needles.jsonl',
    ('making/corpus.py', 'path'): '/data/corpus',
    ('making/corpus.py', 'name'): 'PaulGraham_Essays.txt',
    ('making/corpus.py', 'root'): '/data/corpus',
    ('making/tokenization.py', 'path'): '/models/qwen3/tokenizer.json',
}


def _example(expression: str, module: str = '') -> str:
    """An example of what ``expression`` (a placeholder's code, ``!r`` at the end when it is shown as repr) gives."""
    shown_repr = expression.endswith('!r')
    expression = expression.removesuffix('!r')
    if (module, expression) in MODULE_EXAMPLES:
        text = MODULE_EXAMPLES[module, expression]
    elif expression in EXAMPLES:
        text = EXAMPLES[expression]
    elif 'subset' in expression and not expression.startswith(("', '", "'; '", 'sorted(', 'list(', 'len(')):
        text = 'english'
    else:
        names = re.findall(r'[A-Za-z_]\w*', expression)
        last = names[-1] if names else ''
        if expression.startswith(("', '.join", "'; '.join", "' and '.join", "' or '.join", 'sorted(', 'list(')):
            text = "['english', 'chinese']" if 'subset' in expression.lower() else "['a', 'b']"
        elif expression.startswith(('len(', 'int(', 'max(', 'min(')) or _NUMBER_NAMES.match(last) or '/' in expression:
            text = '3'
        elif expression.startswith('type(') or last == '__name__' or last == '__qualname__':
            text = 'list'
        elif last in _NAME_EXAMPLES or last.rstrip('s') in _NAME_EXAMPLES:
            text = _NAME_EXAMPLES.get(last) or _NAME_EXAMPLES[last.rstrip('s')]
        elif expression.startswith(('quoted(', 'shown(', 'str(')):
            text = 'sideways'
            return repr(text)
        else:
            text = '…'
    return repr(text) if shown_repr and not text.startswith(('[', "'")) else text


def as_printed(template: str, module: str = '') -> str:
    """``template`` with each placeholder filled with an example value: the message as a user sees it."""
    return PLACEHOLDER.sub(lambda match: _example(match.group(1), module), template)


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex a printed message matches when ``template`` made it (each placeholder: any text)."""
    parts = PLACEHOLDER.split(template)
    return re.compile('.*?'.join(re.escape(part) for part in parts[::2]), flags=re.DOTALL)


@functools.cache
def pydantic_errors() -> tuple[RaisedError, ...]:
    """The refusals pydantic words itself (a value outside a parameter's choices, not a number, ...), as the run
    prints them: a parameter of each type given a value of the wrong kind, through the same parse the run uses
    (every parameter with choices; one parameter of each other type stands for the others)."""
    from evalscope_niah.errors import NiahConfigError
    from evalscope_niah.tasks.compose import parameters, parse_params

    by_type: dict[str, str] = {}
    for name, parameter in parameters().items():
        kind = str(parameter.field.annotation)
        by_type.setdefault(name if 'Literal' in kind else kind, name)
    found = {}
    for name in by_type.values():
        try:
            parse_params({name: 'sideways'})
        except NiahConfigError as error:
            if error.detail.startswith('Input should') and error.param == name:
                message = error.detail.replace("(got 'sideways')", f'(got {OPEN}value!r{CLOSE})')
                found.setdefault(message, RaisedError('tasks/compose.py', 'NiahConfigError', name, message))
        except Exception:  # a refusal in another form is listed from the code already
            continue
    return tuple(found.values())


def judge_failure_errors() -> list[RaisedError]:
    """The judge check's stop for each way a judge can fail to answer, worded by the code itself
    (judging/judge_failures.py), so the printed line (judge server unreachable at ...) is on the page."""
    from evalscope_niah.judging.judge_failures import JudgeFailureKind, judge_call_failure

    kinds = JudgeFailureKind.__args__
    details = {'unreachable': 'connection refused', 'timeout': 'no answer in 60 s', 'rejected_key': 'HTTP 401'}
    found = []
    for kind in kinds:
        failure = judge_call_failure(
            kind, url='http://127.0.0.1:8001/v1', model='qwen-plus', detail=details.get(kind, 'HTTP 500')
        )
        found.append(
            RaisedError('judging/judge_failures.py', 'message', 'judge', f'{failure.describe()}; fix: {failure.fix}')
        )
    return found


def group_of(module: str) -> str:
    return next(key for key, _, _, prefixes in GROUPS if any(module.startswith(prefix) for prefix in prefixes))


def _code(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it holds."""
    text = ' '.join(text.split())
    fence = '``' if '`' in text else '`'
    return f'{fence} {text} {fence}' if fence == '``' else f'`{text}`'


def error_catalogue(language: str) -> str:
    errors = raised_errors()
    intro = {
        'en': 'Each entry: the parameter (or error type) the message names, the message as it is printed (with '
        'example values where yours will differ: search for the words around them) and the module that raises it.',
        'zh': '每一条：消息所指的参数（或错误类型）、消息的打印原文（其中随情况变化的部分填了示例值：'
        '请搜索它们前后的文字）以及抛出它的模块。',
    }[language]
    lines = [intro]
    for key, english, chinese, _ in GROUPS:
        members = sorted({error for error in errors if group_of(error.module) == key}, key=_error_order)
        if members:
            fix = FIXES[key][0 if language == 'en' else 1]
            lines += ['', f'### {english if language == "en" else chinese}', '', _fix_label(language) + fix, '']
            lines += [
                f'- {_code(as_printed(error.param, error.module))}: {_code(as_printed(error.message, error.module))} '
                f'({error.module})'
                for error in members
            ]
    return '\n'.join(lines)


def _fix_label(language: str) -> str:
    return '**Fix:** ' if language == 'en' else '**修复：**'


def _error_order(error: RaisedError) -> tuple[str, str, str]:
    return error.param.lower(), error.message, error.module
