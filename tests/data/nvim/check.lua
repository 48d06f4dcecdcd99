-- What an author sees in the webapp sample with a misspelt prototype
-- (t:WebAp), written to the file CDL_LSP_RESULT as JSON: the diagnostics,
-- those left after fixing the buffer (not saved), a definition, a hover and
-- the code lenses.
local seen = {}
local function wait_for(check)
  return vim.wait(30000, check, 50)
end
wait_for(function() return #vim.diagnostic.get(0) > 0 end)
seen.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(seen.diagnostics, { line = d.lnum, col = d.col, end_col = d.end_col, code = d.code, message = d.message })
end
vim.cmd([[%s/t:WebAp"/t:WebApp"/]])
seen.fixed = wait_for(function() return #vim.diagnostic.get(0) == 0 end)

local uri = vim.uri_from_bufnr(0)
local function ask(method, params)
  params.textDocument = { uri = uri }
  for _, answer in pairs(vim.lsp.buf_request_sync(0, method, params, 30000) or {}) do
    return answer.result
  end
end
vim.fn.search("t:WebApp")
seen.definition = ask("textDocument/definition", { position = { line = vim.fn.line(".") - 1, character = vim.fn.col(".") + 2 } })
vim.fn.search("<t:application>")
seen.hover = ask("textDocument/hover", { position = { line = vim.fn.line(".") - 1, character = vim.fn.col(".") + 2 } })
seen.lenses = ask("textDocument/codeLens", {})
vim.fn.writefile({ vim.fn.json_encode(seen) }, os.getenv("CDL_LSP_RESULT"))
vim.cmd("qa!")
