-- What an author sees with the webapp system and its template open in one
-- Neovim (issue 31, point 1), written to the file CDL_LSP_RESULT as JSON:
-- how many clients run, the system's diagnostics once the template has an
-- error typed (not saved), the references found from the template, and the
-- system's diagnostics once a list of the template is renamed and saved.
local seen = {}
local function wait_for(check)
  return vim.wait(30000, check, 50)
end
local function diagnostics(buf)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(found, { line = d.lnum, col = d.col, code = d.code, message = d.message })
  end
  return found
end
-- How many clients run (attached to buffer buf, if given): vim.lsp.get_clients
-- from Neovim 0.10 on; before, buf_get_clients (a table by client id) and get_active_clients.
local function clients(buf)
  local found
  if vim.lsp.get_clients then
    found = vim.lsp.get_clients({ bufnr = buf })
  else
    found = buf and vim.lsp.buf_get_clients(buf) or vim.lsp.get_active_clients()
  end
  local count = 0
  for _ in pairs(found) do count = count + 1 end
  return count
end
local function ask(buf, method, params)
  params.textDocument = { uri = vim.uri_from_bufnr(buf) }
  for _, answer in pairs(vim.lsp.buf_request_sync(buf, method, params, 30000) or {}) do
    return answer.result
  end
end
local system = vim.api.nvim_get_current_buf()
wait_for(function() return clients(system) > 0 end)
ask(system, "textDocument/documentSymbol", {}) -- the system analysed
vim.cmd("split webapp-template.cdl")
local template = vim.api.nvim_get_current_buf()
wait_for(function() return clients(template) > 0 end)
seen.clients = clients()

-- An error typed in the template (not saved) shows on the system's cdl:import.
vim.cmd([[%s/cdl:extends="WebServer"/cdl:extends="WebServr"/]])
seen.import_error = wait_for(function()
  for _, d in ipairs(vim.diagnostic.get(system)) do
    if d.code == "UNKNOWN_PROTOTYPE" and d.lnum == 9 then return true end
  end
  return false
end)
seen.system_diagnostics = diagnostics(system)
vim.cmd("undo")
seen.import_fixed = wait_for(function() return #vim.diagnostic.get(system) == 0 end)

-- References from the template: the system's list that extends WebApp.
vim.fn.search("<WebApp ")
local position = { line = vim.fn.line(".") - 1, character = vim.fn.col(".") + 2 }
seen.references = ask(template, "textDocument/references", { position = position, context = { includeDeclaration = false } })

-- A list of the template renamed and saved: the system's cdl:extends names nothing now.
vim.cmd([[%s/<WebApp /<WebApplicationTemplate /]])
vim.cmd([[%s/<\/WebApp>/<\/WebApplicationTemplate>/]])
vim.cmd("write")
seen.renamed = wait_for(function()
  for _, d in ipairs(vim.diagnostic.get(system)) do
    if d.code == "UNKNOWN_PROTOTYPE" and d.lnum == 12 then return true end
  end
  return false
end)
seen.system_after_rename = diagnostics(system)
vim.fn.writefile({ vim.fn.json_encode(seen) }, os.getenv("CDL_LSP_RESULT"))
vim.cmd("qa!")
