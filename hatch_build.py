"""Put evalscope_niah.pth at the root of site-packages, for regular and editable installs alike.

The .pth makes a plain `evalscope eval` use our needle_haystack (EvalScope has no entry points for benchmarks).
hatchling's force-include does not apply to editable wheels, hence this hook.
"""

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class PthFileHook(BuildHookInterface):
    def initialize(self, version, build_data):
        key = 'force_include_editable' if version == 'editable' else 'force_include'
        build_data.setdefault(key, {})['evalscope_niah.pth'] = 'evalscope_niah.pth'
