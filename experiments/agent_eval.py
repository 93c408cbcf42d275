"""`agentic-rag agent-eval` (agentic_rag/experiments/agent_eval.py) under its old path."""
from agentic_rag.experiments.agent_eval import main

if __name__ == "__main__":
    main()
