import Dockerode from 'dockerode';

/**
 * A Docker client that follows the ecosystem's conventions: with no explicit options,
 * docker-modem reads DOCKER_HOST (unix://, tcp://, ssh://), DOCKER_TLS_VERIFY and
 * DOCKER_CERT_PATH, else uses the local socket.
 */
export function createDockerClient(): Dockerode {
  return new Dockerode();
}
