"""Chinese descriptions of every ``extra_params`` name, keyed by parameter name, for the Chinese parameters table
(docs/hooks/parameters_table.py). Names, defaults and owners come from the params model; only the meaning is
translated here. ``task`` is not here: its Chinese lists the registered tasks (each task's ``description_zh``), and a
task may keep its parameters' Chinese in their fields. tests/test_docs.py fails when a parameter has no Chinese
description (or an entry here names no parameter)."""

ZH_DESCRIPTIONS = {
    'retrieval_question': '放在干草堆之后提出的问题；None 表示使用每个子集自己的问题。',
    'needles': '插入干草堆的针句；None 表示使用每个子集自己的针。',
    'context_lengths_min': '最短的上下文长度（整个提示的 token 数）。',
    'context_lengths_max': '最长的上下文长度（整个提示的 token 数）。',
    'context_lengths_num_intervals': '从最短到最长之间取多少个上下文长度。',
    'context_lengths': '明确列出的上下文长度（token）；给出时覆盖 min/max/num_intervals 的范围。',
    'document_depth_percent_min': '针的最浅深度，百分比（0 = 开头）。',
    'document_depth_percent_max': '针的最深深度，百分比（100 = 结尾）。',
    'document_depth_percent_intervals': '从最浅到最深之间取多少个针的深度。',
    'document_depth_percents': '明确列出的针深度（百分比）；给出时覆盖 min/max/intervals 的范围。',
    'document_depth_percent_interval_type': (
        "深度的间隔方式：'linear'（均匀）或 'sigmoid'（Kamradt 的方式：靠近开头和结尾更密）。"
    ),
    'tokenizer_path': (
        "计量长度所用的分词器：模型 id、本地目录、'tiktoken:<编码名>'，或 'server'（模型服务自己的分词器：vLLM 或 "
        'llama.cpp 的 /tokenize 及其对话模板，长度即模型自己的 token）。'
    ),
    'show_score': '在热力图图片上写出每个单元格的分数。',
    'judge_check': (
        "被测模型运行之前，裁判模型先给根据各子集的针构造的校准答案打分。'stop'：裁判模型评错时停止运行；"
        "'fallback'：改用规则评分（并注明）；'off'：不检查。"
    ),
    'absent_control': (
        '每个上下文长度增加一个无针对照单元格：什么也不插入，正确答案是文档中没有说。与准确率分开报告（弃答率与猜测率）。'
    ),
    'num_repeats': (
        '每个单元格的干草堆数，每个从语料的不同位置开始（CDME 的 num_repeats_per_file）；单元格得分为其均值，附 '
        'bootstrap 置信区间。'
    ),
    'needle_file_name': (
        'OpenCompass NeedleBench v2 的针文件（每条记录含 needle、retrieval_question、arg1、arg2、'
        'gold_standard_answer、language）；不写路径时从语料目录读取；每次重复抽一根针，抽取方式与 NeedleBench '
        '相同（由它设置 needle_bank）。'
    ),
    'needle_bank': (
        "从针库抽针：'builtin'（随包提供的虚构事实，中英文）或一个 JSONL/JSON 文件路径，每条为 {needle, question, "
        'answer, language}。None 表示使用子集的针，除非给出了 n_needles、sample_method、fixed_index 或 '
        'n_runs（此时使用 builtin）。'
    ),
    'n_needles': (
        'inspect_evals：从针库抽取的针数，按 inspect 的方式分布到各单元格（截断或循环成每个单元格一根，'
        '长度在外、位置在内）；每个单元格每轮一个样本。'
    ),
    'sample_method': "inspect_evals：针库的抽取方式：'fixed'、'sequential' 或 'random'。",
    'fixed_index': "inspect_evals：'fixed' 时的针库下标（'sequential' 时为起始下标）。",
    'n_runs': 'inspect_evals：整个网格重复的次数；每一轮把上一轮各单元格的针顺移一个单元格。',
    'sampling_seed': '所有随机选择所用的种子（随机抽针、魔法数字、推理链打乱顺序）。',
    'start_buffer': '干草堆开头不放针的 token 数。',
    'end_buffer': '干草堆结尾不放针的 token 数。',
    'length_buffer': '每个上下文长度中留空的 token 数（CDME 的 length_buffer）：提示相应缩短。',
    'guide': '仿照 CDME 的问题，在问题后附上答案格式提示；问题本身已要求格式时，则在该要求前加上 CDME 的“先思考”提示。',
    'effective_length_threshold': '上下文长度计为有效所需达到的分数（0.85，与 RULER 相同）。',
    'effective_length_mode': "'absolute'：平均分 >= 阈值；'relative'：>= 阈值 × 最短长度的分数（与 NoLiMa 相同）。",
    'request_order': (
        "'prefix'：按最利于自动前缀缓存复用的顺序发送请求；'grid'：外层循环长度、内层循环深度，"
        "与内置基准的发送顺序相同；'replicas'：在前缀顺序的基础上让各干草堆起点轮流发送，"
        '使在途请求分散到路由器后的各个副本（路由器按 routing_key_header 路由；适用于有共享前缀缓存的服务：vLLM、'
        'SGLang）。两种前缀顺序下，如果前面某个在途提示正在计算本提示的前缀，本提示会等它算完再发。'
    ),
    'routing_key_header': (
        '把每个提示所属前缀组（子集、干草堆起点）的键放在请求头中发送，使路由器的一致性哈希策略把同一组固定在同一副本上，'
        "保住共享前缀缓存：'on'（X-Session-ID、X-SMG-Routing-Key：vllm-router、sglang-router）、'off'，"
        '或自定义的请求头名。'
    ),
    'min_context': 'inspect_evals 的最短上下文长度（n_contexts > 1 时才用到，默认 10000）。',
    'max_context': 'inspect_evals 的最长上下文长度；n_contexts 为 1 时只测这一个长度。',
    'n_contexts': (
        'inspect_evals 的长度个数，从 min_context 到 max_context 取 round(min + i × 步长)（默认 15）；'
        '使用 inspect_evals 的名称时，除非给出 tokenizer_path，否则用 tiktoken cl100k_base 计数。'
    ),
    'n_positions': (
        'inspect_evals 的针位置个数，位于 start_buffer 与 end_buffer 之间：'
        '一个时在正中，多个时从头到尾均匀分布（默认 15）。'
    ),
    'final_context_length_buffer': (
        'Kamradt 的 LLMNeedleHaystackTester：每个上下文长度减去的 token 数（他的默认值为 200，配置按他的写法时生效）；'
        '在这里，整个提示相应缩短（length_buffer）。'
    ),
    'multi_needle': (
        'Kamradt 的 LLMNeedleHaystackTester：true 时插入 needles（未给出时用 run.py 的三根披萨针），第一根在该深度，'
        '其余向结尾分布；false（默认）只插入 needle。'
    ),
    'print_ongoing_status': 'Kamradt 的 print_ongoing_status：接受并忽略（进度打印；EvalScope 自有进度显示）。',
    'save_results': 'Kamradt 的 save_results：接受并忽略（结果总会写入报告目录）。',
    'save_contexts': 'Kamradt 的 save_contexts：接受并忽略（每个提示都保存在 EvalScope 的 review 文件中）。',
    'results_version': (
        'Kamradt 的 results_version：接受并忽略（他的结果文件标签；是否重跑由 EvalScope 的 use_cache 决定）。'
    ),
    'seconds_to_sleep_between_completions': (
        'Kamradt 的 seconds_to_sleep_between_completions：接受并忽略（仅控制节奏）。'
    ),
    'model_to_test': 'Kamradt 的 model_to_test：拒绝；被测模型是 EvalScope TaskConfig 的 model（配合 api_url）。',
    'provider': 'Kamradt 的 provider：拒绝；被测模型是 EvalScope TaskConfig 的 model（配合 api_url 与 eval_type）。',
    'model_name': 'Kamradt 的 model_name：拒绝；被测模型是 EvalScope TaskConfig 的 model。',
    'evaluator': (
        'Kamradt 的 evaluator：拒绝；答案由 TaskConfig judge（命令行 --judge JSON）设置的裁判模型评分'
        "（judge={'strategy': 'rule'} 只用规则分）。"
    ),
    'evaluator_model_name': (
        'Kamradt 的 evaluator_model_name：拒绝；裁判模型是 TaskConfig judge 中 models 的 model_id（--judge JSON）。'
    ),
    'eval_set': 'Kamradt 的 eval_set：拒绝；不读取 LangSmith 数据集，请在这里给出 needles 与 retrieval_question。',
    'num_concurrent_requests': 'Kamradt 的 num_concurrent_requests：拒绝；并发数是 TaskConfig 的 eval_batch_size。',
    'haystack_dir': (
        'Kamradt 的 haystack_dir：拒绝；请把干草堆文件作为子集的 file_list 给出（位于 dataset_args 的 local_path 中）。'
    ),
    'num_repeats_per_file': 'OpenCompass CDME 中 num_repeats 的别名。',
    'tokenizer_model': "OpenCompass CDME：OpenAI 模型名，如 'gpt-4'，离线用 tiktoken 计数（设置 tokenizer_path）。",
    'needle': (
        "OpenCompass CDME：一个针句，等同于 needles [needle]；前后写有换行（'\\n...\\n'）时按 CDME "
        '的做法单独成行插入（needles 中亦然）。'
    ),
    'keyword': (
        'OpenCompass CDME 多针：推理链最后一环中回答 retrieval_question 的那个词。'
        "给出它时，needles 就是你自己的推理链：任务为 'reasoning'（不写 task 也是如此），按此关键词评分。"
    ),
    'answer': (
        "retrieval_question 的答案：任务 'single' 时为针中的简短答案（用于 guide 与猜测识别；给出自己的 needles "
        '而不写它时，每根针的关键事实由针和问题推出）；与 keyword 一起时为完整参考答案（CDME 的 answer）。'
    ),
    'language': "子集没有自己的语言设置时所用的语言：'en' 或 'zh'，或 CDME 的 'English' / 'Chinese'（不区分大小写）。",
    'file_list': (
        '没有自己语料的子集所读取的语料文件（CDME 的 file_list）：纯文本或 JSON Lines（字段为 text），按顺序拼接，'
        '必须位于 local_path 内。'
    ),
    'length': 'OpenCompass CDME：单个上下文长度（context_lengths [length]）。',
    'depth': 'OpenCompass CDME：单个针深度，百分比（document_depth_percents [depth]）。',
    'max_corpus_repeats': (
        '为填满最长的上下文长度，语料最多可重复的次数；需要重复更多次的运行会报错（请换更长的语料、缩短长度，'
        '或调大此值）。'
    ),
    'max_reply_bytes': (
        '单条回复（被测模型或裁判模型）最多读取的字节数；超过时不作解析直接拒收，按服务端故障处理（先重试，仍失败则记为错误，'
        '从不计分）。流式输出长回答或需要 logprobs 时请调大。'
    ),
    'allow_large_grid': '允许每次运行超过 10,000 个样本（网格单元格 × 子集）；即便如此也最多 1,000,000 个。',
    'subsets': (
        '按子集覆盖设置或新增子集：{名字: {corpus_file 或 file_list, text_field, language, needles, '
        'retrieval_question}}。内置子集：english（PaulGraham_Essays.txt）、chinese（Journey_to_the_West.txt）。'
    ),
    'num_needles': "任务 'multi_retrieval' 每个样本的事实数（1–20）。",
    'distractors': (
        "任务 'multi_retrieval'：放入干草堆的干扰事实，形式相同但关于其他键（RULER 的 multi-key）；None = 每根针 3 "
        '条，0 = 不放（v4 之前的做法）。'
    ),
    'diff': "任务 'reasoning'：后一环相对前一环增加的深度，百分点（与 CDME 的 diff 相同）。",
    'shuffle_links': "任务 'reasoning'：以打乱的顺序插入各环。",
    'associative_distractor': (
        "任务 'associative'：另在远离针的位置放一句与问题有共同词语、却不回答问题的句子（NoLiMa-Hard）。"
    ),
}
