"""cdl lsp: a Language Server Protocol server for CDL documents (issue 25)."""
