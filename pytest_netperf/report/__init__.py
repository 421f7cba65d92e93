"""What a session shows people and machines: rows, terminal table, JSON, Markdown, plots."""
