"""Layer 11, the `agentic-rag` command line: one typer app (`app`), one module per command group
(`core`: index, search, demo, ask, llm, config; `evaluate`: sweep, export, claims, detectors,
agent-eval; `testset`; `serve`), assembled and run by `main`. Commands only call the library.
A new command goes in the module of its group."""
