"""Prompt variants for the retrieve_first user turn, on DEV questions (choose on dev)."""
import json
import sys
import time

sys.path.insert(0, "experiments")
from pathlib import Path

import agent_eval as E

from agentic_rag.agent import loop as A
from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_llm import ServerConfig
from agentic_rag.evaluation.answers import token_f1
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.server import LlamaServer

home = Path("experiments/cache/agent-eval")
srv = LlamaServer(ServerConfig(port=8777, n_ctx=8192, n_threads=2), home=str(home)); srv.start()
chat = OpenAIChatModel(RAGConfig().llm, base_url=srv.base_url, cache=ChatCache(home / "llm.sqlite"))
INSTR = {
 "B": "Answer the question above from the passages, in one or two sentences, and put the id of the passage you used after the fact, like [1a2b3]. Say \"I don't know\" only when no passage is about the question.",
 "C": "Answer the question above from the passages, in one or two sentences, and put the id of the passage you used after the fact, like [1a2b3].",
}
orig = A._AgentRun._record_search
def make(variant):
    def rec(self, n, via, args, output):
        self.steps.append(A.AgentStep(step=n, kind="tool_call", via=via, arguments=args, tool=output))
        self.messages[1] = {"role": "user", "content": "Passages from the documentation:\n\n" + output.content + "\n\nQuestion: " + self.question + "\n\n" + INSTR[variant]}
    return rec
items = {}
for d, n in (("python-faq", 6), ("tau2-banking", 3)):
    its, ds = E.load(d, "dev", n, 0, {"python-faq": 80, "tau2-banking": 250}[d])
    items[d] = (its, E.build_pipeline(ds, home, {"context.max_tokens": 800}, chat))
try:
    for variant in sys.argv[1:]:
        A._AgentRun._record_search = orig if variant == "A" else make(variant)
        for d, (its, pipe) in items.items():
            for it in its:
                t0 = time.time()
                res = A.run_agent(it["question"], chat, AgenticRAGTool(pipe), AgentConfig())
                f1 = token_f1(res.answer, it["answers"]) if it["answers"] else float("nan")
                print(json.dumps({"v": variant, "d": d, "qid": it["qid"], "abst": res.abstained, "cites": res.cited_chunks[:2], "f1": round(f1, 2), "s": round(time.time()-t0), "ans": res.answer[:120]}), flush=True)
finally:
    srv.stop()
