"""Tests of the stdlib OpenAI-compatible test server, with the real ``openai`` client, urllib
and EvalScope's own OpenAI-compatible model API."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request

import openai
import pytest

from evalscope_niah.testing.openai_server import (
    FAULT_KINDS,
    FaultPlan,
    OpenAICompatServer,
    RecordedRequest,
    make_judge_responder,
    needle_finder,
    overlap_grader,
    parse_judge_prompt,
    reasoning_only,
    tool_call_only,
)

USER_TEMPLATE = (
    'Please read the following text and answer the question below.\n\n<text>\n{context}\n</text>\n\n'
    "<question>\n{question}\n</question>\n\nDon't give information outside the document or repeat your findings."
)

EN_NEEDLE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
EN_QUESTION = 'What is the best thing to do in San Francisco?'
EN_HAYSTACK = [
    'Startups are a way to compress a whole working life into a few years.',
    'Most founders underestimate how long it takes to build something people want!',
    'Why do so many good ideas look like bad ideas at first?',
    'The hardest part of writing an essay is deciding what to leave out.',
    'Great work usually comes from people who are curious about the thing itself.',
]
ZH_NEEDLE = '在旧金山最好的事情是在阳光明媚的日子里吃一个三明治并坐在多洛雷斯公园。'
ZH_QUESTION = '在旧金山最好的事情是什么？'
ZH_HAYSTACK = ['今天早上下了一场大雨。', '小明和朋友们一起去图书馆看书！', '你知道长城有多长吗？', '晚上大家回家吃饭。']


def user_prompt(haystack: list[str], needle: str, question: str, sep: str = ' ') -> str:
    middle = len(haystack) // 2
    context = sep.join([*haystack[:middle], needle, *haystack[middle:]])
    return USER_TEMPLATE.format(context=context, question=question)


def echo(messages: list[dict]) -> str:
    return f'echo: {messages[-1]["content"]}'


def client(server: OpenAICompatServer, **kwargs) -> openai.OpenAI:
    kwargs.setdefault('max_retries', 0)
    kwargs.setdefault('timeout', 10)
    return openai.OpenAI(base_url=server.base_url, api_key='x', **kwargs)


def chat(c: openai.OpenAI, model: str, content: str = 'hello', **kwargs):
    return c.chat.completions.create(model=model, messages=[{'role': 'user', 'content': content}], **kwargs)


def post(server: OpenAICompatServer, payload: dict, timeout: float = 10) -> tuple[int | None, dict, bytes]:
    """POST to /v1/chat/completions with urllib; status None when the connection was dropped."""
    request = urllib.request.Request(
        f'{server.base_url}/chat/completions',
        data=json.dumps(payload).encode(),
        headers={'Content-Type': 'application/json'},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError):
        return None, {}, b''


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture
def server():
    with OpenAICompatServer({'echo': echo, 'needle': needle_finder}, max_seconds=60) as s:
        yield s


# ---------------------------------------------------------------------------------------------
# Normal operation
# ---------------------------------------------------------------------------------------------


def test_base_url_binds_loopback_on_a_free_port(server):
    assert server.host == '127.0.0.1'
    assert server.port > 0
    assert server.base_url == f'http://127.0.0.1:{server.port}/v1'


def test_completion_with_openai_client(server):
    completion = chat(client(server), 'echo', 'hello there')
    assert completion.object == 'chat.completion'
    assert completion.id.startswith('chatcmpl-')
    assert completion.model == 'echo'
    assert isinstance(completion.created, int)
    choice = completion.choices[0]
    assert choice.message.role == 'assistant'
    assert choice.message.content == 'echo: hello there'
    assert choice.finish_reason == 'stop'
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

    [record] = server.requests
    assert isinstance(record, RecordedRequest)
    assert record.model == 'echo'
    assert record.messages == [{'role': 'user', 'content': 'hello there'}]
    assert json.loads(record.raw_body)['model'] == 'echo'
    assert record.body['messages'] == record.messages
    assert (record.fault, record.status, record.stream, record.reply) == (None, 200, False, 'echo: hello there')
    assert record.timestamp <= time.time()


def test_raw_json_shape_with_urllib(server):
    status, headers, body = post(server, {'model': 'echo', 'messages': [{'role': 'user', 'content': 'hi'}]})
    assert status == 200
    assert headers['Content-Type'] == 'application/json'
    data = json.loads(body)
    assert set(data) == {'id', 'object', 'created', 'model', 'choices', 'usage'}
    assert data['object'] == 'chat.completion'
    assert data['choices'][0]['message'] == {'role': 'assistant', 'content': 'echo: hi'}
    assert data['choices'][0]['finish_reason'] == 'stop'
    assert set(data['usage']) == {'prompt_tokens', 'completion_tokens', 'total_tokens'}


def test_reasoning_only_and_tool_call_only_replies_have_content_null():
    responders = {'thinks': reasoning_only(echo), 'calls': tool_call_only(echo, name='reply')}
    with OpenAICompatServer(responders, max_seconds=60) as server:
        messages = [{'role': 'user', 'content': 'hi'}]
        thinks, calls = (json.loads(post(server, {'model': m, 'messages': messages})[2]) for m in responders)
        streamed = post(server, {'model': 'calls', 'messages': messages, 'stream': True})[2].decode()
    assert thinks['choices'][0]['message'] == {'role': 'assistant', 'content': None, 'reasoning_content': 'echo: hi'}
    assert (thinks['choices'][0]['finish_reason'], calls['choices'][0]['finish_reason']) == ('stop', 'tool_calls')
    [call] = calls['choices'][0]['message']['tool_calls']
    assert calls['choices'][0]['message']['content'] is None
    assert (call['function']['name'], json.loads(call['function']['arguments'])) == ('reply', {'answer': 'echo: hi'})
    deltas = [json.loads(e[len('data: ') :])['choices'] for e in streamed.split('\n\n') if e and 'DONE' not in e]
    assert [d[0]['delta']['tool_calls'][0]['function']['name'] for d in deltas if 'tool_calls' in d[0]['delta']] == [
        'reply'
    ]


@pytest.mark.parametrize('api_style', ['llama.cpp', 'vllm'])
def test_prompt_cache_reports_the_prefix_shared_with_the_last_prompt(api_style):
    """One slot, as llama-server with one slot: a repeated prompt is served whole from cache, a new one only up to
    where it parts from the last."""
    with OpenAICompatServer({'echo': echo}, api_style=api_style, tokenize=False, prompt_cache=True) as s:
        replies = []
        for content in ('alpha beta gamma delta', 'alpha beta gamma delta', 'alpha beta zeta eta', 'omega'):
            status, _, body = post(s, {'model': 'echo', 'messages': [{'role': 'user', 'content': content}]})
            assert status == 200
            replies.append(json.loads(body))

    def cached_and_computed(reply: dict) -> tuple[int, int]:
        if api_style == 'llama.cpp':
            return reply['timings']['cache_n'], reply['timings']['prompt_n']
        cached = reply['usage']['prompt_tokens_details']['cached_tokens']
        return cached, reply['usage']['prompt_tokens'] - cached

    first, repeated, parted, other = (cached_and_computed(reply) for reply in replies)
    assert first[0] == 0 and first[1] > 0
    assert repeated == (sum(first), 0)
    assert 0 < parted[0] < sum(parted) and parted[1] > 0
    assert other[0] < parted[0]  # only the role label is shared


def test_streaming_with_openai_client(server):
    long_text = 'a fairly long message so that the reply is split into several chunks'
    stream = chat(client(server), 'echo', long_text, stream=True, stream_options={'include_usage': True})
    chunks = list(stream)
    assert all(c.object == 'chat.completion.chunk' for c in chunks)
    assert len({c.id for c in chunks}) == 1
    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) > 2
    assert ''.join(c.choices[0].delta.content for c in content_chunks) == f'echo: {long_text}'
    assert chunks[0].choices[0].delta.role == 'assistant'
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == ['stop']
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert server.requests[0].stream is True


def test_streaming_raw_sse_with_urllib(server):
    status, headers, body = post(
        server, {'model': 'echo', 'messages': [{'role': 'user', 'content': 'x'}], 'stream': True}
    )
    assert status == 200
    assert headers['Content-Type'].startswith('text/event-stream')
    text = body.decode()
    assert text.endswith('data: [DONE]\n\n')
    events = [e for e in text.split('\n\n') if e]
    assert all(e.startswith('data: ') for e in events)
    payloads = [json.loads(e[len('data: ') :]) for e in events[:-1]]
    assert ''.join(p['choices'][0]['delta'].get('content', '') for p in payloads) == 'echo: x'
    assert 'usage' not in payloads[-1]  # usage only with stream_options.include_usage


def test_models_health_and_unknown_model(server):
    c = client(server)
    assert sorted(m.id for m in c.models.list()) == ['echo', 'needle']
    assert get(f'{server.url}/health')[0] == 200
    with pytest.raises(openai.NotFoundError) as err:
        chat(c, 'no-such-model')
    assert err.value.status_code == 404
    assert err.value.body['code'] == 'model_not_found'
    status, _, body = post(server, {'model': 'no-such-model', 'messages': []})
    assert status == 404
    assert json.loads(body)['error']['type'] == 'invalid_request_error'
    assert [r.status for r in server.requests_for('no-such-model')] == [404, 404]


def test_bad_requests_get_400(server):
    assert post(server, {'messages': []})[0] == 400
    assert post(server, {'model': 'echo', 'messages': 'nope'})[0] == 400


def test_requests_for_and_prompt_chars_for(server):
    c = client(server)
    chat(c, 'echo', 'abc')
    chat(c, 'needle', 'hello. world')
    chat(c, 'echo', '12345')
    assert [r.messages[0]['content'] for r in server.requests_for('echo')] == ['abc', '12345']
    assert server.prompt_chars_for('echo') == 8
    assert server.prompt_chars_for('needle') == len('hello. world')
    assert server.prompt_chars_for('nobody') == 0
    # content parts count as their text
    c.chat.completions.create(model='echo', messages=[{'role': 'user', 'content': [{'type': 'text', 'text': 'xy'}]}])
    assert server.prompt_chars_for('echo') == 10


# ---------------------------------------------------------------------------------------------
# Responders
# ---------------------------------------------------------------------------------------------


def test_needle_finder_english(server):
    prompt = user_prompt(EN_HAYSTACK, EN_NEEDLE, EN_QUESTION)
    assert chat(client(server), 'needle', prompt).choices[0].message.content == EN_NEEDLE


def test_needle_finder_chinese(server):
    prompt = user_prompt(ZH_HAYSTACK, ZH_NEEDLE, ZH_QUESTION, sep='')
    assert chat(client(server), 'needle', prompt).choices[0].message.content == ZH_NEEDLE


def test_needle_finder_fallbacks_and_ties():
    # no tags: the question is the last line, the haystack the rest of the message
    message = 'Cats sleep a lot. Rockets need fuel to reach orbit.\nWhat do rockets need?'
    assert needle_finder([{'role': 'user', 'content': message}]) == 'Rockets need fuel to reach orbit.'
    # ties go to the first sentence
    tie = '<text>Alpha one here. Alpha two here.</text><question>alpha</question>'
    assert needle_finder([{'role': 'user', 'content': tie}]) == 'Alpha one here.'
    assert needle_finder([{'role': 'user', 'content': '<text></text><question>q</question>'}]) == ''


def test_overlap_grader():
    reference = 'eat a sandwich and sit in Dolores Park'
    assert overlap_grader('q', reference, 'Eat a sandwich and sit in Dolores Park on a sunny day.') == 10
    assert overlap_grader('q', reference, 'Sit in Dolores Park.') == 5  # sit, dolores, park of 6 terms
    assert overlap_grader('q', reference, 'Something else entirely.') == 1
    assert overlap_grader('q', '吃三明治', '他在公园吃三明治') == 10
    assert overlap_grader('q', '吃三明治', '三明治') == 7
    assert overlap_grader('q', '吃三明治', '三明') == 5
    assert overlap_grader('q', '吃三明治', '吃饭') == 1
    assert overlap_grader('q', '42', 'The answer is 42.') == 10


def test_parse_judge_prompt_from_any_template():
    template = (
        'You are a judge.\n\nQuestion: {question}\n\nReference answer:\n{reference}\n\n'
        'Candidate answer:\n{answer}\n\nReply with JSON {{"reasoning": "...", "rating": N}}.'
    )
    prompt = template.format(question='What? Why?', reference='A {braced} ref.', answer='line 1\nline 2')
    assert parse_judge_prompt(prompt, template) == {
        'question': 'What? Why?',
        'reference': 'A {braced} ref.',
        'answer': 'line 1\nline 2',
    }
    assert parse_judge_prompt('an unrelated prompt', template) is None


def test_judge_responder_with_evalscope_niah_judge_template():
    judge = pytest.importorskip(
        'evalscope_niah.judging.judge', reason='evalscope_niah.judging.judge (JUDGE_USER_TEMPLATE) is not written yet'
    )
    template = getattr(judge, 'JUDGE_USER_TEMPLATE', None)
    if template is None:
        pytest.skip('evalscope_niah.judging.judge has no JUDGE_USER_TEMPLATE yet')

    seen: list[tuple[str, str, str]] = []

    def grader(question: str, reference: str, answer: str) -> int:
        seen.append((question, reference, answer))
        return overlap_grader(question, reference, answer)

    prompt = template.format(question=EN_QUESTION, reference=EN_NEEDLE, answer='Eat a sandwich in Dolores Park.')
    with OpenAICompatServer({'judge': make_judge_responder(grader)}, max_seconds=60) as s:
        content = chat(client(s), 'judge', prompt).choices[0].message.content
        assert s.prompt_chars_for('judge') == len(prompt)
    verdict = json.loads(content)
    assert set(verdict) == {'reasoning', 'rating'}
    assert seen == [(EN_QUESTION, EN_NEEDLE, 'Eat a sandwich in Dolores Park.')]
    assert verdict['rating'] == overlap_grader(*seen[0])

    build = getattr(judge, 'build_judge_messages', None)
    if build is not None:  # the judge's full message list (system rubric + user task) works too
        messages = build(question='Q?', reference='The code is 1234.', answer='The code: 1234')
        with OpenAICompatServer({'judge': make_judge_responder(grader)}, max_seconds=60) as s:
            reply = client(s).chat.completions.create(model='judge', messages=messages)
        assert json.loads(reply.choices[0].message.content)['rating'] == 10
        assert seen[-1] == ('Q?', 'The code is 1234.', 'The code: 1234')


# ---------------------------------------------------------------------------------------------
# Fault injection
# ---------------------------------------------------------------------------------------------


def faulty(fault: str, **plan) -> OpenAICompatServer:
    return OpenAICompatServer({'m': needle_finder}, faults={'m': FaultPlan(**{fault: 1.0}, **plan)}, max_seconds=60)


def test_fault_http_500():
    with faulty('http_500') as s:
        with pytest.raises(openai.InternalServerError) as err:
            chat(client(s), 'm')
        assert err.value.status_code == 500
        assert s.fault_counts['http_500'] == 1
        assert (s.requests[0].fault, s.requests[0].status) == ('http_500', 500)


def test_fault_http_429_with_retry_after():
    with faulty('http_429') as s:
        with pytest.raises(openai.RateLimitError) as err:
            chat(client(s), 'm')
        assert err.value.response.headers['retry-after'] == '1'
    with faulty('http_429', retry_after_seconds=3) as s:
        assert post(s, {'model': 'm', 'messages': []})[1]['Retry-After'] == '3'


def test_fault_hang_times_out_client():
    with faulty('hang') as s:
        start = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            chat(client(s, timeout=1), 'm')
        assert time.monotonic() - start < 5
        assert s.fault_counts['hang'] == 1
        assert s.requests[0].status is None


def test_fault_drop_is_a_connection_error():
    with faulty('drop') as s:
        with pytest.raises(openai.APIConnectionError) as err:
            chat(client(s), 'm')
        assert not isinstance(err.value, openai.APITimeoutError)
        assert s.requests[0].fault == 'drop'


def test_fault_drip_keeps_every_read_short():
    # Each byte comes within 0.2 s, so a 1 s timeout per read never fires: only a deadline for the whole request
    # (evalscope_niah.serving.deadline) ends it. A drip stops by closing the connection after drip_seconds.
    payload = {'model': 'm', 'messages': [{'role': 'user', 'content': 'a. b'}]}
    with faulty('drip', drip_interval_s=0.05, drip_seconds=60) as s:
        request = urllib.request.Request(f'{s.base_url}/chat/completions', data=json.dumps(payload).encode())
        with urllib.request.urlopen(request, timeout=1) as response:
            declared = int(response.headers['Content-Length'])
            chunks = [response.read(1) for _ in range(30)]  # 1.5 s of dripping, no read over 1 s
            assert response.status == 200 and all(len(chunk) == 1 for chunk in chunks) and declared > 30
        assert s.fault_counts['drip'] == 1


def test_fault_long_body_declares_more_than_it_sends():
    payload = {'model': 'm', 'messages': [{'role': 'user', 'content': 'a. b'}]}
    with faulty('long_body', hang_seconds=60) as s:
        request = urllib.request.Request(f'{s.base_url}/chat/completions', data=json.dumps(payload).encode())
        with urllib.request.urlopen(request, timeout=0.5) as response:
            declared = int(response.headers['Content-Length'])
            received = b''
            with pytest.raises(TimeoutError):  # the body is sent, then the connection stalls
                while True:
                    received += response.read1(65536)
        assert declared == len(received) + 1000
        assert json.loads(received)['object'] == 'chat.completion'


@pytest.mark.parametrize('stream', [False, True])
def test_fault_malformed_json(stream):
    with faulty('malformed_json') as s:
        with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK (while iterating, when streaming)
            result = chat(client(s), 'm', 'a. b', stream=stream)
            if stream:
                list(result)
        status, _, body = post(s, {'model': 'm', 'messages': [{'role': 'user', 'content': 'a. b'}]})
        assert status == 200
        with pytest.raises(ValueError):
            json.loads(body)
        assert s.fault_counts['malformed_json'] == 2


@pytest.mark.parametrize('stream', [False, True])
def test_fault_empty_content(stream):
    with faulty('empty_content') as s:
        if stream:
            chunks = list(chat(client(s), 'm', stream=True))
            assert ''.join(c.choices[0].delta.content or '' for c in chunks if c.choices) == ''
            assert chunks[-1].choices[0].finish_reason == 'stop'
        else:
            choice = chat(client(s), 'm').choices[0]
            assert (choice.message.content, choice.finish_reason) == ('', 'stop')


@pytest.mark.parametrize('stream', [False, True])
def test_fault_length(stream):
    prompt = user_prompt(EN_HAYSTACK, EN_NEEDLE, EN_QUESTION)
    with faulty('length') as s:
        if stream:
            chunks = list(chat(client(s), 'm', prompt, stream=True))
            content = ''.join(c.choices[0].delta.content or '' for c in chunks if c.choices)
            finish_reason = chunks[-1].choices[0].finish_reason
        else:
            choice = chat(client(s), 'm', prompt).choices[0]
            content, finish_reason = choice.message.content, choice.finish_reason
    assert finish_reason == 'length'
    assert content and EN_NEEDLE.startswith(content) and content != EN_NEEDLE


def test_fail_first_n_then_succeed():
    plan = FaultPlan(fail_first_n=2)
    with OpenAICompatServer({'m': needle_finder}, faults={'m': plan}, max_seconds=60) as s:
        statuses = [post(s, {'model': 'm', 'messages': [{'role': 'user', 'content': 'x.'}]})[0] for _ in range(3)]
        assert statuses == [500, 500, 200]
        assert s.fault_counts['http_500'] == 2
    # the openai client's own retries get through
    with OpenAICompatServer({'m': needle_finder}, faults={'m': plan}, max_seconds=60) as s:
        answer = chat(client(s, max_retries=2), 'm', 'Tea is hot. Ice is cold.\nWhat is cold?')
        assert answer.choices[0].message.content == 'Ice is cold.'
        assert [r.status for r in s.requests] == [500, 500, 200]


def test_an_outage_by_prompt_length_fails_every_request_in_its_range_only():
    plan = FaultPlan(outage_prompt_tokens=(10, 20))
    with OpenAICompatServer({'m': needle_finder}, faults={'m': plan}, max_seconds=60) as s:
        prompts = {'short': 'Tea is hot.', 'in range': 'Tea is hot. ' * 3, 'long': 'Tea is hot. ' * 8}
        statuses = {
            name: [post(s, {'model': 'm', 'messages': [{'role': 'user', 'content': text}]})[0] for _ in range(3)]
            for name, text in prompts.items()
        }
        assert statuses == {'short': [200] * 3, 'in range': [500] * 3, 'long': [200] * 3}
        assert s.fault_counts['http_500'] == 3
    with pytest.raises(ValueError, match='outage_prompt_tokens'):
        FaultPlan(outage_prompt_tokens=(20, 10))


def _fault_sequence(seed: int, n: int = 40, interleave: bool = False) -> tuple[list, dict]:
    plan = FaultPlan(http_500=0.2, http_429=0.1, drop=0.1, malformed_json=0.1, empty_content=0.1, length=0.1)
    with OpenAICompatServer({'m': needle_finder, 'other': needle_finder}, faults={'*': plan}, seed=seed) as s:
        for _ in range(n):
            post(s, {'model': 'm', 'messages': [{'role': 'user', 'content': 'q. a'}]})
            if interleave:
                post(s, {'model': 'other', 'messages': [{'role': 'user', 'content': 'q. a'}]})
        return [r.fault for r in s.requests_for('m')], s.fault_counts


def test_fault_rates_are_deterministic_per_seed():
    first, counts = _fault_sequence(seed=7)
    second, _ = _fault_sequence(seed=7, interleave=True)  # other models' traffic does not shift it
    assert first == second
    assert len(set(first)) >= 4  # several kinds, including None
    assert sum(counts.values()) == sum(f is not None for f in first)
    assert set(counts) == set(FAULT_KINDS)
    assert _fault_sequence(seed=8)[0] != first


def test_fault_plan_validation():
    with pytest.raises(ValueError):
        FaultPlan(http_500=1.5)
    with pytest.raises(ValueError):
        FaultPlan(http_500=0.6, drop=0.6)
    assert FaultPlan(length=0.5).pick(0.49) == 'length'
    assert FaultPlan(length=0.5).pick(0.5) is None


# ---------------------------------------------------------------------------------------------
# Bounds and shutdown
# ---------------------------------------------------------------------------------------------


def test_max_requests_bound():
    with OpenAICompatServer({'m': needle_finder}, max_requests=3) as s:
        c = client(s)
        for _ in range(3):
            chat(c, 'm', 'ok.')
        with pytest.raises(openai.InternalServerError) as err:
            chat(c, 'm', 'ok.')
        assert err.value.status_code == 503
        assert get(f'{s.url}/health')[0] == 503
        assert [r.status for r in s.requests] == [200, 200, 200, 503]


def test_max_seconds_watchdog_shuts_down():
    s = OpenAICompatServer({'m': needle_finder}, max_seconds=0.3)
    try:
        deadline = time.monotonic() + 5
        while not s.closed and time.monotonic() < deadline:
            time.sleep(0.05)
        assert s.closed
        with pytest.raises(urllib.error.URLError):
            get(f'{s.url}/health')
    finally:
        s.close()


def test_shutdown_ends_a_hang_promptly():
    s = faulty('hang', hang_seconds=30)
    outcome: list[object] = []

    def call() -> None:
        outcome.append(post(s, {'model': 'm', 'messages': [{'role': 'user', 'content': 'x'}]}, timeout=60))

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    assert s.wait_for_requests(1, timeout=5)
    start = time.monotonic()
    s.close()
    caller.join(timeout=3)
    elapsed = time.monotonic() - start
    assert elapsed < 2
    assert not caller.is_alive()
    assert outcome == [(None, {}, b'')]  # the connection closed without an answer
    s.close()  # idempotent


# ---------------------------------------------------------------------------------------------
# EvalScope's own OpenAI-compatible client
# ---------------------------------------------------------------------------------------------


def _evalscope_model(s: OpenAICompatServer, model: str, **config):
    from evalscope.api.model import GenerateConfig, get_model

    return get_model(
        model=model,
        eval_type='openai_api',
        base_url=s.base_url,
        api_key='x',
        config=GenerateConfig(**config),
        model_args={'max_retries': 0},  # forwarded to openai.OpenAI(...): no SDK-level retries
        memoize=False,
    )


@pytest.mark.parametrize('stream', [False, True])
def test_evalscope_openai_api_model_generates(stream):
    prompt = user_prompt(EN_HAYSTACK, EN_NEEDLE, EN_QUESTION)
    with OpenAICompatServer({'needle-model': needle_finder}, max_seconds=60) as s:
        model = _evalscope_model(s, 'needle-model', stream=stream, timeout=10, retries=1, temperature=0.0)
        output = model.generate(prompt)
        assert output.completion == EN_NEEDLE
        assert output.stop_reason == 'stop'
        [record] = s.requests
        assert record.stream is stream
        assert record.messages == [{'role': 'user', 'content': prompt}]
        assert record.body['temperature'] == 0.0


def test_evalscope_retries_after_a_server_error():
    with OpenAICompatServer({'m': needle_finder}, faults={'m': FaultPlan(fail_first_n=1)}, max_seconds=60) as s:
        model = _evalscope_model(s, 'm', retries=2, retry_interval=0, timeout=10)
        assert model.generate('Tea is hot. Ice is cold.\nWhat is cold?').completion == 'Ice is cold.'
        assert [(r.fault, r.status) for r in s.requests] == [('http_500', 500), (None, 200)]


def test_a_model_with_an_api_key_answers_401_to_any_other_key() -> None:
    with OpenAICompatServer({'echo': echo, 'open': echo}, api_keys={'echo': 'right-key'}, max_seconds=60) as server:
        good = openai.OpenAI(base_url=server.base_url, api_key='right-key', max_retries=0, timeout=10)
        assert chat(good, 'echo').choices[0].message.content == 'echo: hello'
        with pytest.raises(openai.AuthenticationError) as error:
            chat(client(server), 'echo')
        assert error.value.status_code == 401 and 'right-key' not in str(error.value)
        assert chat(client(server), 'open').choices[0].message.content == 'echo: hello'  # not listed: any key
        assert [record.status for record in server.requests] == [200, 401, 200]
