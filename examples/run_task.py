"""Run needle_haystack from Python against an OpenAI-compatible endpoint, judged by another model.

    python examples/run_task.py --api-url http://127.0.0.1:8000/v1 --model qwen2.5-7b-instruct \
        --judge-url https://dashscope.aliyuncs.com/compatible-mode/v1 --judge-model qwen-plus --judge-key sk-...

Without --judge-url the answers are scored with the rule score alone.
"""

from __future__ import annotations

import argparse

from evalscope import TaskConfig, run_task

import evalscope_niah  # noqa: F401  registers our needle_haystack (the installed hook does it too)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--api-url', required=True)
    parser.add_argument('--model', required=True)
    parser.add_argument('--api-key', default='EMPTY')
    parser.add_argument('--judge-url')
    parser.add_argument('--judge-model')
    parser.add_argument('--judge-key', default='EMPTY')
    parser.add_argument('--local-path', help='folder with PaulGraham_Essays.txt and Journey_to_the_West.txt')
    args = parser.parse_args()

    judge = (
        {'models': [{'model_id': args.judge_model, 'api_url': args.judge_url, 'api_key': args.judge_key}]}
        if args.judge_url
        else {'strategy': 'rule'}
    )
    dataset_args = {
        'extra_params': {
            'context_lengths': [4000, 16000, 32000],
            'document_depth_percent_intervals': 5,
            'show_score': True,
        }
    }
    if args.local_path:
        dataset_args['local_path'] = args.local_path
    run_task(
        TaskConfig(
            model=args.model,
            api_url=args.api_url,
            api_key=args.api_key,
            datasets=['needle_haystack'],
            dataset_args={'needle_haystack': dataset_args},
            judge=judge,
            ignore_errors=True,
        )
    )


if __name__ == '__main__':
    main()
