# make notebooks: JupyterLab from the project's virtual environment, on a host without Docker
# (scripts/notebooks.sh; with Docker: `docker compose up jupyter`, docker-compose.yml).
#
#   make notebooks                         127.0.0.1:8888, a fresh token printed with the URL
#   make notebooks NOTEBOOKS_PORT=8890     another port
#   MPTCPLAB_JUPYTER_TOKEN=... make notebooks   a token of your choice
NOTEBOOKS_PORT ?= 8888

.PHONY: notebooks

notebooks: bootstrap
	@MPTCPLAB_JUPYTER_PORT=$(NOTEBOOKS_PORT) scripts/notebooks.sh
