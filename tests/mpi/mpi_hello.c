/* SPDX-License-Identifier: BSD-3-Clause */
/* One checked MPI_Allreduce: the smallest program test_params.sh runs
 * under MPICH with libtacos-pmpi preloaded, for the parameters it reads.
 * Also says how many ranks the MPI library puts on this rank's node
 * (MPI_COMM_TYPE_SHARED), which test_mpich.sh's one-node checks need. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int n, sum = 1, on_node = 0;
    MPI_Comm node;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    printf("mpi_hello: %d rank(s) on this node\n", on_node);
    printf("mpi_hello: %d failure(s)\n", sum != n);
    MPI_Finalize();
    return sum != n;
}
