// The .env.example text, made from the settings' definitions (lib/config.ts SETTINGS).
import { SETTINGS } from './config.ts';

/** The .env.example text, generated from SETTINGS (kept in the repo; a test checks they agree). */
export function envExample(): string {
  const lines = [
    '# cbp settings. Copy to .env in the folder you run cbp from, or set them as environment variables.',
    '# Precedence, first wins: the environment, then .env, then the config file (--config FILE or CBP_CONFIG),',
    '# then the defaults below. Relative paths are to the working folder. Values: KEY=value, KEY="quoted".',
    '# CBP_CONFIG=cbp.config.yaml',
    '',
  ];
  let group = '';
  for (const d of SETTINGS) {
    if (d.group !== group) { group = d.group; lines.push(`# --- ${group} ---`); }
    lines.push(`# ${d.description}${d.secret ? ' (secret)' : ''}`);
    // A path under the data folder stays commented out: set here, it would no longer follow CBP_DATA_DIR.
    lines.push(`${d.default === undefined ? '# ' : ''}${d.env}=${d.default ?? ''}`);
  }
  return lines.join('\n') + '\n';
}
