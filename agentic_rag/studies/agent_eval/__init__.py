"""The agent evaluation: retrieval policies × tool modes against closed-book, judged, on
τ²-banking and the Python FAQ (`run`), the questions and references (`tasks`) and the tables
(`summary`)."""
