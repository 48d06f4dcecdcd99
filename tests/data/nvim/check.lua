-- What an author sees in the webapp sample with a misspelt prototype
-- (t:WebAp), written to the file CDL_LSP_RESULT as JSON: the diagnostics,
-- those left after fixing the buffer (not saved), a definition, a hover and
-- the code lenses, and what running the first one showed.
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

-- The lens above WebApplication run as a user runs it (vim.lsp.codelens.run):
-- what Neovim said (vim.notify) and what the server showed (window/showMessage).
seen.lens_notes, seen.lens_shown = {}, {}
local notify = vim.notify
vim.notify = function(message, ...)
  table.insert(seen.lens_notes, message)
  return notify(message, ...)
end
local show = vim.lsp.handlers["window/showMessage"]
vim.lsp.handlers["window/showMessage"] = function(err, result, ctx, config)
  table.insert(seen.lens_shown, result.message)
  return show(err, result, ctx, config)
end
vim.lsp.codelens.refresh()
wait_for(function() return #vim.lsp.codelens.get(0) > 0 end)
vim.api.nvim_win_set_cursor(0, { seen.lenses[1].range.start.line + 1, 0 })
vim.lsp.codelens.run()
wait_for(function() return #seen.lens_shown + #seen.lens_notes > 0 end)
vim.fn.writefile({ vim.fn.json_encode(seen) }, os.getenv("CDL_LSP_RESULT"))
vim.cmd("qa!")
