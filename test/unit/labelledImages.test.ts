import * as assert from 'node:assert/strict';
import type Dockerode from 'dockerode';
import { listImagesLabelled } from '../../src/docker/images/labelled';

describe('images listed by labels', () => {
  it('asks the engine for the last label only and keeps the images that carry every one', async () => {
    const asked: unknown[] = [];
    const images = [
      { Id: 'a', Labels: { 'x.managed': '1', 'x.kind': 'chat' } },
      { Id: 'b', Labels: { 'x.kind': 'chat' } },
      { Id: 'c', Labels: { 'x.managed': '2', 'x.kind': 'chat' } },
      { Id: 'd', Labels: null },
    ];
    const docker = {
      listImages: (o: unknown) => {
        asked.push(o);
        return Promise.resolve(images);
      },
    } as unknown as Dockerode;
    const found = await listImagesLabelled(docker, ['x.managed=1', 'x.kind=chat']);
    assert.deepEqual(found.map((i) => i.Id), ['a']);
    assert.deepEqual(asked, [{ all: false, filters: { label: ['x.kind=chat'] } }]);
    assert.deepEqual((await listImagesLabelled(docker, ['x.managed'])).map((i) => i.Id), ['a', 'c']);
  });
});
