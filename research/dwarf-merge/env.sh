# Paths of the NVIDIA tools installed by scripts/install-tools.sh (`just tools`).
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/tools.env"
