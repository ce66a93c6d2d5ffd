"""Running untrusted snippets: the runner seam, the fork-server pool and the job jail.

Only the zygote and job processes (``zygote.py`` and what it imports) import torch; the
pool that the web process uses talks to them over pipes and reads back capped JSON.
"""
