"""How a job's error and log are shown to whoever opens its page (issue 50).

A job that failed on a model call once showed every role the called server's 500 body and a full
traceback with the server's paths. Everyone now sees the error's class and a short message; the
traceback and an answer's body stay in the stored log (and the worker's log), shown to admins.
"""

from __future__ import annotations

import re

ERROR_CHARS = 200
TRACEBACK_START = "Traceback (most recent call last):"
_CHAINED = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)
# An HTTP client's status error carries the answer's body after the code (openai: "Error code: 500 -
# {...}"); the code is kept, the body is not.
_BODY_AFTER_CODE = re.compile(r"((?:Error code|HTTP|status)[: ]+\d{3})\s*[-:]\s*\S.*", re.I)
HIDDEN = "the answer's body and the traceback are in the log an admin reads"


def short_error(text: str) -> str:
    """The error's first line without an answer's body after its status code, at most
    ERROR_CHARS characters."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    line, cut = _BODY_AFTER_CODE.subn(r"\1", line)
    if len(line) > ERROR_CHARS:
        line, cut = line[: ERROR_CHARS - 1] + "…", 1
    return f"{line} ({HIDDEN})" if cut else line


def log_without_tracebacks(text: str) -> str:
    """The log with each traceback replaced by one line naming its exception (shortened as
    ``short_error``), and answers' bodies cut from other lines."""
    lines = (text or "").splitlines()
    shown: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if TRACEBACK_START not in line:
            shown.append(_BODY_AFTER_CODE.sub(r"\1", line))
            index += 1
            continue
        stamp = line[: line.index(TRACEBACK_START)]
        index += 1
        last = ""
        while index < len(lines):
            current = lines[index]
            if not current.strip() or current[:1].isspace() or current.startswith(_CHAINED):
                index += 1
                continue
            if current.startswith(TRACEBACK_START):
                index += 1
                continue
            last = current  # the exception line ends a traceback, unless another is chained
            index += 1
            following = next((later for later in lines[index:] if later.strip()), "")
            if not following.startswith(_CHAINED):
                break
        shown.append(f"{stamp}[traceback hidden: an admin sees it] {short_error(last)}".rstrip())
    return "\n".join(shown) + ("\n" if text.endswith("\n") and shown else "")


def job_presented(job, *, user) -> dict:
    """What the job page shows of ``job``'s error and log to ``user``: everything to an admin, the
    short forms to anyone else."""
    from studio.accounts.roles import ADMIN, user_roles

    if user is not None and ADMIN in user_roles(user):
        return {"error_shown": job.error, "log_shown": job.log_tail, "details_hidden": False}
    return {
        "error_shown": short_error(job.error),
        "log_shown": log_without_tracebacks(job.log_tail),
        "details_hidden": True,
    }
