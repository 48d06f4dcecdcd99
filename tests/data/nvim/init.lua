-- The README's Neovim set-up for cdl lsp, as tests/test_lsp_editor.py runs it
-- headless. CDL_LSP_CMD (a JSON list) replaces the command `cdl lsp`, so that
-- the test runs the server of the checkout it tests.
local cmd = { "cdl", "lsp" }
if os.getenv("CDL_LSP_CMD") then
  cmd = vim.fn.json_decode(os.getenv("CDL_LSP_CMD"))
end
local settings = { importPaths = {}, catalogs = {}, allowRemote = false }

vim.filetype.add({ extension = { cdl = "cdl" } })
vim.api.nvim_create_autocmd("FileType", {
  pattern = "cdl",
  callback = function(args)
    -- The workspace's root: the nearest directory above the file holding .git, else the file's own.
    local dir = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(args.buf), ":p:h")
    local git = vim.fn.finddir(".git", dir .. ";")
    local root = git ~= "" and vim.fn.fnamemodify(git, ":p:h:h") or dir
    if vim.lsp.start then -- Neovim 0.8 and later
      vim.lsp.start({ name = "cdl", cmd = cmd, root_dir = root, init_options = settings })
    else -- Neovim 0.7 (Debian 12)
      local id = vim.lsp.start_client({ name = "cdl", cmd = cmd, root_dir = root, init_options = settings })
      vim.lsp.buf_attach_client(args.buf, id)
    end
  end,
})
