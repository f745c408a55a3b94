// YAML's parser, loaded on the first YAML file read: most commands read none, and its load is part of every start.
import { createRequire } from 'node:module';

export const parseYaml = (text: string): unknown => (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);
