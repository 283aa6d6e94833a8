# -*- coding: utf-8 -*-
# Test-only stdout callback: one JSON document with every task result and the stats.
from __future__ import annotations

DOCUMENTATION = r"""
name: test_json
type: stdout
short_description: Print all task results and stats as one JSON document (for the tests)
description:
  - Collects plays, tasks and per-host results and prints them as JSON at the end.
"""

import json

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "test_json"

    def __init__(self):
        super().__init__()
        self.plays = []

    def v2_playbook_on_play_start(self, play):
        self.plays.append({"play": {"name": play.get_name()}, "tasks": []})

    def _task(self, task):
        if not self.plays:
            self.plays.append({"play": {"name": ""}, "tasks": []})
        tasks = self.plays[-1]["tasks"]
        if not tasks or tasks[-1]["task"]["id"] != str(task._uuid):
            tasks.append({"task": {"name": task.get_name(), "id": str(task._uuid)}, "hosts": {}})
        return tasks[-1]

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._task(task)

    def _record(self, result, **extra):
        entry = self._task(result._task)
        data = dict(self._convert(result._result))
        data.update(extra)
        entry["hosts"][result._host.get_name()] = data

    @staticmethod
    def _convert(value):
        return json.loads(json.dumps(value, default=str))

    def v2_runner_on_ok(self, result):
        self._record(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, failed=True, ignore_errors=ignore_errors)

    def v2_runner_on_skipped(self, result):
        self._record(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._record(result, unreachable=True)

    def v2_playbook_on_stats(self, stats):
        hosts = sorted(stats.processed.keys())
        summary = {h: stats.summarize(h) for h in hosts}
        self._display.display(json.dumps({"plays": self.plays, "stats": summary}, indent=1,
                                         default=str))
