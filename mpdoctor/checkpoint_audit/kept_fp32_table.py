"""The modules transformers 5.24.0 and diffusers 0.42.1 keep in float32, per model class.

Written by `python -m mpdoctor.checkpoint_audit.kept_fp32` from the installed libraries; do not edit.
"""

# fmt: off
TRANSFORMERS_VERSION = '5.24.0'
DIFFUSERS_VERSION = '0.42.1'
# class -> (_keep_in_fp32_modules, _keep_in_fp32_modules_strict), for the classes that list any
TRANSFORMERS = {'AXK1ForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'AXK1ForSequenceClassification': ([], ['e_score_correction_bias', 'gate.weight']),
 'AXK1ForTokenClassification': ([], ['e_score_correction_bias', 'gate.weight']),
 'AXK1Model': ([], ['e_score_correction_bias', 'gate.weight']),
 'AXK1PreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'AXK2ForCausalLM': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'AXK2ForSequenceClassification': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'AXK2ForTokenClassification': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'AXK2Model': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'AXK2PreTrainedModel': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'AfmoeForCausalLM': (['input_layernorm',
                       'k_norm',
                       'norm',
                       'post_attention_layernorm',
                       'post_mlp_layernorm',
                       'pre_mlp_layernorm',
                       'q_norm'],
                      ['expert_bias']),
 'AfmoeModel': (['input_layernorm',
                 'k_norm',
                 'norm',
                 'post_attention_layernorm',
                 'post_mlp_layernorm',
                 'pre_mlp_layernorm',
                 'q_norm'],
                ['expert_bias']),
 'AfmoePreTrainedModel': (['input_layernorm',
                           'k_norm',
                           'norm',
                           'post_attention_layernorm',
                           'post_mlp_layernorm',
                           'pre_mlp_layernorm',
                           'q_norm'],
                          ['expert_bias']),
 'Apertus1p5ForConditionalGeneration': ([], ['audio_tokenizer', 'vision_tokenizer']),
 'Apertus1p5Model': ([], ['audio_tokenizer', 'vision_tokenizer']),
 'Apertus1p5PreTrainedModel': ([], ['audio_tokenizer', 'vision_tokenizer']),
 'BailingHybridForCausalLM': ([], ['A_log', 'conv1d', 'dt_bias', 'e_score_correction_bias', 'gate.weight']),
 'BailingHybridModel': ([], ['A_log', 'conv1d', 'dt_bias', 'e_score_correction_bias', 'gate.weight']),
 'BailingHybridPreTrainedModel': ([], ['A_log', 'conv1d', 'dt_bias', 'e_score_correction_bias', 'gate.weight']),
 'BeamForCausalLM': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'BeamForTokenClassification': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'BeamModel': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'BeamPreTrainedModel': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'Blip2ForConditionalGeneration': (['qformer', 'query_tokens'], []),
 'Blip2ForImageTextRetrieval': (['qformer', 'query_tokens'], []),
 'Blip2Model': (['qformer', 'query_tokens'], []),
 'Blip2TextModelWithProjection': (['qformer', 'query_tokens'], []),
 'Blip2VisionModelWithProjection': (['qformer', 'query_tokens'], []),
 'DeepseekOcr2TextModel': ([], ['gate.weight']),
 'DeepseekOcr2TextPreTrainedModel': ([], ['gate.weight']),
 'DeepseekV2ForCausalLM': ([], ['gate.weight']),
 'DeepseekV2ForSequenceClassification': ([], ['gate.weight']),
 'DeepseekV2Model': ([], ['gate.weight']),
 'DeepseekV2PreTrainedModel': ([], ['gate.weight']),
 'DeepseekV32ForCausalLM': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV32Model': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV32PreTrainedModel': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV3ForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV3ForSequenceClassification': ([], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV3ForTokenClassification': ([], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV3Model': ([], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV3PreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'DeepseekV4ForCausalLM': (['self_attn.compressor.gate_proj',
                            'self_attn.compressor.indexer.gate_proj',
                            'self_attn.compressor.indexer.kv_proj',
                            'self_attn.compressor.indexer.scorer.weights_proj',
                            'self_attn.compressor.kv_proj'],
                           ['attn_hc',
                            'e_score_correction_bias',
                            'ffn_hc',
                            'hc_head',
                            'input_layernorm',
                            'kv_norm',
                            'norm',
                            'position_bias',
                            'post_attention_layernorm',
                            'q_a_norm',
                            'sinks']),
 'DeepseekV4Model': (['self_attn.compressor.gate_proj',
                      'self_attn.compressor.indexer.gate_proj',
                      'self_attn.compressor.indexer.kv_proj',
                      'self_attn.compressor.indexer.scorer.weights_proj',
                      'self_attn.compressor.kv_proj'],
                     ['attn_hc',
                      'e_score_correction_bias',
                      'ffn_hc',
                      'hc_head',
                      'input_layernorm',
                      'kv_norm',
                      'norm',
                      'position_bias',
                      'post_attention_layernorm',
                      'q_a_norm',
                      'sinks']),
 'DeepseekV4PreTrainedModel': (['self_attn.compressor.gate_proj',
                                'self_attn.compressor.indexer.gate_proj',
                                'self_attn.compressor.indexer.kv_proj',
                                'self_attn.compressor.indexer.scorer.weights_proj',
                                'self_attn.compressor.kv_proj'],
                               ['attn_hc',
                                'e_score_correction_bias',
                                'ffn_hc',
                                'hc_head',
                                'input_layernorm',
                                'kv_norm',
                                'norm',
                                'position_bias',
                                'post_attention_layernorm',
                                'q_a_norm',
                                'sinks']),
 'Dots1ForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots1Model': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots1PreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NoteForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NoteForConditionalGeneration': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NoteModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NotePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NoteTextModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NoteVisionModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Dots3NoteVisionPreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_MoeForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_MoeModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_MoePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VLMoeForConditionalGeneration': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VLMoeModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VLMoePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VLMoeTextModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VLMoeVisionTransformerPretrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VL_MoeForConditionalGeneration': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VL_MoeModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VL_MoePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VL_MoeTextModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Ernie4_5_VL_MoeVisionTransformerPretrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'EsmFold2Model': ([],
                   ['boundaries',
                    'distogram_head',
                    'fourier',
                    'norm.bias',
                    'norm.weight',
                    'norm_mix',
                    'norm_single',
                    'norm_start']),
 'EsmFold2PreTrainedModel': ([],
                             ['boundaries',
                              'distogram_head',
                              'fourier',
                              'norm.bias',
                              'norm.weight',
                              'norm_mix',
                              'norm_single',
                              'norm_start']),
 'ExaoneMoeForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'ExaoneMoeModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'ExaoneMoePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'FlintForCausalLM': ([], ['gate.weight', 'sinks']),
 'FlintModel': ([], ['gate.weight', 'sinks']),
 'FlintPreTrainedModel': ([], ['gate.weight', 'sinks']),
 'Glm4MoeForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4MoeLiteForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4MoeLiteModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4MoeLitePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4MoeModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4MoePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4vMoeForConditionalGeneration': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4vMoeModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4vMoePreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4vMoeTextModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm4vMoeVisionModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'Glm5NextForConditionalGeneration': ([],
                                      ['A_log',
                                       'attn_hc.base',
                                       'attn_hc.scale',
                                       'conv1d',
                                       'dt_bias',
                                       'e_score_correction_bias',
                                       'ffn_hc.base',
                                       'ffn_hc.scale',
                                       'gate.weight']),
 'Glm5NextModel': ([],
                   ['A_log',
                    'attn_hc.base',
                    'attn_hc.scale',
                    'conv1d',
                    'dt_bias',
                    'e_score_correction_bias',
                    'ffn_hc.base',
                    'ffn_hc.scale',
                    'gate.weight']),
 'Glm5NextPreTrainedModel': ([],
                             ['A_log',
                              'attn_hc.base',
                              'attn_hc.scale',
                              'conv1d',
                              'dt_bias',
                              'e_score_correction_bias',
                              'ffn_hc.base',
                              'ffn_hc.scale',
                              'gate.weight']),
 'Glm5NextTextModel': ([],
                       ['A_log',
                        'attn_hc.base',
                        'attn_hc.scale',
                        'conv1d',
                        'dt_bias',
                        'e_score_correction_bias',
                        'ffn_hc.base',
                        'ffn_hc.scale',
                        'gate.weight']),
 'Glm5NextVisionModel': ([],
                         ['A_log',
                          'attn_hc.base',
                          'attn_hc.scale',
                          'conv1d',
                          'dt_bias',
                          'e_score_correction_bias',
                          'ffn_hc.base',
                          'ffn_hc.scale',
                          'gate.weight']),
 'GlmMoeDsaForCausalLM': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'GlmMoeDsaModel': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'GlmMoeDsaPreTrainedModel': (['indexer.weights_proj'], ['e_score_correction_bias', 'gate.weight']),
 'GptOssForCausalLM': (['input_layernorm', 'norm', 'post_attention_layernorm'], []),
 'GptOssForSequenceClassification': (['input_layernorm', 'norm', 'post_attention_layernorm'], []),
 'GptOssForTokenClassification': (['input_layernorm', 'norm', 'post_attention_layernorm'], []),
 'GptOssModel': (['input_layernorm', 'norm', 'post_attention_layernorm'], []),
 'GptOssPreTrainedModel': (['input_layernorm', 'norm', 'post_attention_layernorm'], []),
 'GradiumPhononTTSForConditionalGeneration': ([], ['freqs', 'latent_mean', 'latent_std']),
 'GraniteSpeech5Encoder': ([], ['conv.norm']),
 'GraniteSpeech5ForCTC': ([], ['conv.norm']),
 'GraniteSpeech5PreTrainedModel': ([], ['conv.norm']),
 'HYV3ForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'HYV3Model': ([], ['e_score_correction_bias', 'gate.weight']),
 'HYV3PreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'HYV4ForCausalLM': ([], ['lm_head']),
 'HYV4Model': ([],
               ['base',
                'e_score_correction_bias',
                'fn',
                'gate.weight',
                'hc_base',
                'hc_fn',
                'hc_scale',
                'k_norm',
                'scale',
                'sinks',
                'weights_proj']),
 'HYV4PreTrainedModel': ([],
                         ['base',
                          'e_score_correction_bias',
                          'fn',
                          'gate.weight',
                          'hc_base',
                          'hc_fn',
                          'hc_scale',
                          'k_norm',
                          'scale',
                          'sinks',
                          'weights_proj']),
 'HYV4VLForConditionalGeneration': ([], ['lm_head']),
 'HYV4VLModel': ([],
                 ['base',
                  'e_score_correction_bias',
                  'fn',
                  'gate.weight',
                  'hc_base',
                  'hc_fn',
                  'hc_scale',
                  'k_norm',
                  'scale',
                  'sinks',
                  'weights_proj']),
 'HYV4VLPreTrainedModel': ([],
                           ['base',
                            'e_score_correction_bias',
                            'fn',
                            'gate.weight',
                            'hc_base',
                            'hc_fn',
                            'hc_scale',
                            'k_norm',
                            'scale',
                            'sinks',
                            'weights_proj']),
 'HYV4VLTextModel': ([],
                     ['base',
                      'e_score_correction_bias',
                      'fn',
                      'gate.weight',
                      'hc_base',
                      'hc_fn',
                      'hc_scale',
                      'k_norm',
                      'scale',
                      'sinks',
                      'weights_proj']),
 'HYV4VLVisionModel': ([],
                       ['base',
                        'e_score_correction_bias',
                        'fn',
                        'gate.weight',
                        'hc_base',
                        'hc_fn',
                        'hc_scale',
                        'k_norm',
                        'scale',
                        'sinks',
                        'weights_proj']),
 'Inkling2ForCausalLM': ([],
                         ['attention_input',
                          'e_score_correction_bias',
                          'final_input',
                          'mlp.gate.weight',
                          'mlp_input',
                          'post_attention_convolution',
                          'post_mlp_convolution',
                          'sconv.conv1d']),
 'Inkling2ForConditionalGeneration': ([],
                                      ['attention_input',
                                       'e_score_correction_bias',
                                       'final_input',
                                       'mlp.gate.weight',
                                       'mlp_input',
                                       'post_attention_convolution',
                                       'post_mlp_convolution',
                                       'sconv.conv1d']),
 'Inkling2LoopForCausalLM': ([],
                             ['attention_input',
                              'e_score_correction_bias',
                              'final_input',
                              'forget_gate_proj',
                              'message_gate_proj',
                              'message_input',
                              'mlp.gate.weight',
                              'mlp_input',
                              'post_attention_convolution',
                              'post_mlp_convolution',
                              'sconv.conv1d']),
 'Inkling2LoopForConditionalGeneration': ([],
                                          ['attention_input',
                                           'e_score_correction_bias',
                                           'final_input',
                                           'forget_gate_proj',
                                           'message_gate_proj',
                                           'message_input',
                                           'mlp.gate.weight',
                                           'mlp_input',
                                           'post_attention_convolution',
                                           'post_mlp_convolution',
                                           'sconv.conv1d']),
 'Inkling2LoopModel': ([],
                       ['attention_input',
                        'e_score_correction_bias',
                        'final_input',
                        'forget_gate_proj',
                        'message_gate_proj',
                        'message_input',
                        'mlp.gate.weight',
                        'mlp_input',
                        'post_attention_convolution',
                        'post_mlp_convolution',
                        'sconv.conv1d']),
 'Inkling2LoopPreTrainedModel': ([],
                                 ['attention_input',
                                  'e_score_correction_bias',
                                  'final_input',
                                  'forget_gate_proj',
                                  'message_gate_proj',
                                  'message_input',
                                  'mlp.gate.weight',
                                  'mlp_input',
                                  'post_attention_convolution',
                                  'post_mlp_convolution',
                                  'sconv.conv1d']),
 'Inkling2LoopTextModel': ([],
                           ['attention_input',
                            'e_score_correction_bias',
                            'final_input',
                            'forget_gate_proj',
                            'message_gate_proj',
                            'message_input',
                            'mlp.gate.weight',
                            'mlp_input',
                            'post_attention_convolution',
                            'post_mlp_convolution',
                            'sconv.conv1d']),
 'Inkling2Model': ([],
                   ['attention_input',
                    'e_score_correction_bias',
                    'final_input',
                    'mlp.gate.weight',
                    'mlp_input',
                    'post_attention_convolution',
                    'post_mlp_convolution',
                    'sconv.conv1d']),
 'Inkling2PreTrainedModel': ([],
                             ['attention_input',
                              'e_score_correction_bias',
                              'final_input',
                              'mlp.gate.weight',
                              'mlp_input',
                              'post_attention_convolution',
                              'post_mlp_convolution',
                              'sconv.conv1d']),
 'Inkling2TextModel': ([],
                       ['attention_input',
                        'e_score_correction_bias',
                        'final_input',
                        'mlp.gate.weight',
                        'mlp_input',
                        'post_attention_convolution',
                        'post_mlp_convolution',
                        'sconv.conv1d']),
 'Inkling2VisionModel': ([],
                         ['attention_input',
                          'e_score_correction_bias',
                          'final_input',
                          'mlp.gate.weight',
                          'mlp_input',
                          'post_attention_convolution',
                          'post_mlp_convolution',
                          'sconv.conv1d']),
 'InklingAudioModel': ([],
                       ['attn_sconv',
                        'e_score_correction_bias',
                        'gate.global_scale',
                        'k_sconv',
                        'mlp_sconv',
                        'v_sconv']),
 'InklingForCausalLM': ([],
                        ['attn_sconv',
                         'e_score_correction_bias',
                         'gate.global_scale',
                         'k_sconv',
                         'mlp_sconv',
                         'v_sconv']),
 'InklingForConditionalGeneration': ([],
                                     ['attn_sconv',
                                      'e_score_correction_bias',
                                      'gate.global_scale',
                                      'k_sconv',
                                      'mlp_sconv',
                                      'v_sconv']),
 'InklingModel': ([],
                  ['attn_sconv',
                   'e_score_correction_bias',
                   'gate.global_scale',
                   'k_sconv',
                   'mlp_sconv',
                   'v_sconv']),
 'InklingPreTrainedModel': ([],
                            ['attn_sconv',
                             'e_score_correction_bias',
                             'gate.global_scale',
                             'k_sconv',
                             'mlp_sconv',
                             'v_sconv']),
 'InklingTextModel': ([],
                      ['attn_sconv',
                       'e_score_correction_bias',
                       'gate.global_scale',
                       'k_sconv',
                       'mlp_sconv',
                       'v_sconv']),
 'InklingVisionModel': ([],
                        ['attn_sconv',
                         'e_score_correction_bias',
                         'gate.global_scale',
                         'k_sconv',
                         'mlp_sconv',
                         'v_sconv']),
 'InstructBlipForConditionalGeneration': (['query_tokens'], []),
 'InstructBlipModel': (['query_tokens'], []),
 'InstructBlipVideoForConditionalGeneration': (['query_tokens'], []),
 'InstructBlipVideoModel': (['query_tokens'], []),
 'KimiLinearForCausalLM': ([], ['dt_bias', 'e_score_correction_bias', 'gate.weight']),
 'KimiLinearModel': ([], ['dt_bias', 'e_score_correction_bias', 'gate.weight']),
 'KimiLinearPreTrainedModel': ([], ['dt_bias', 'e_score_correction_bias', 'gate.weight']),
 'Kolibri1ForCausalLM': ([], ['e_score_correction_bias']),
 'Kolibri1Model': ([], ['e_score_correction_bias']),
 'Kolibri1PreTrainedModel': ([], ['e_score_correction_bias']),
 'KyutaiSpeechToTextForConditionalGeneration': ([], ['codec_model']),
 'LongcatFlashForCausalLM': (['classifier.weight'], []),
 'LongcatFlashModel': (['classifier.weight'], []),
 'LongcatFlashPreTrainedModel': (['classifier.weight'], []),
 'MT5EncoderModel': (['wo'], []),
 'MT5ForConditionalGeneration': (['wo'], []),
 'MT5ForQuestionAnswering': (['wo'], []),
 'MT5ForSequenceClassification': (['wo'], []),
 'MT5ForTokenClassification': (['wo'], []),
 'MT5Model': (['wo'], []),
 'MT5PreTrainedModel': (['wo'], []),
 'MT5Stack': (['wo'], []),
 'MiMoV2FlashForCausalLM': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'MiMoV2FlashModel': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'MiMoV2FlashPreTrainedModel': ([], ['e_score_correction_bias', 'mlp.gate.weight']),
 'MistralLarge4ForConditionalGeneration': (['indexer.weights_proj'], ['mlp.gate.weight', 'rotary_emb']),
 'MistralLarge4Model': (['indexer.weights_proj'], ['mlp.gate.weight', 'rotary_emb']),
 'MistralLarge4PreTrainedModel': (['indexer.weights_proj'], ['mlp.gate.weight', 'rotary_emb']),
 'MistralLarge4TextModel': (['indexer.weights_proj'], ['mlp.gate.weight', 'rotary_emb']),
 'MuseSparkAudioModel': ([],
                         ['e_score_correction_bias',
                          'mlp.gate.weight',
                          'post_attention_residual_gate',
                          'post_feedforward_residual_gate']),
 'MuseSparkForConditionalGeneration': ([],
                                       ['e_score_correction_bias',
                                        'mlp.gate.weight',
                                        'post_attention_residual_gate',
                                        'post_feedforward_residual_gate']),
 'MuseSparkModel': ([],
                    ['e_score_correction_bias',
                     'mlp.gate.weight',
                     'post_attention_residual_gate',
                     'post_feedforward_residual_gate']),
 'MuseSparkPreTrainedModel': ([],
                              ['e_score_correction_bias',
                               'mlp.gate.weight',
                               'post_attention_residual_gate',
                               'post_feedforward_residual_gate']),
 'MuseSparkTextModel': ([],
                        ['e_score_correction_bias',
                         'mlp.gate.weight',
                         'post_attention_residual_gate',
                         'post_feedforward_residual_gate']),
 'MuseSparkVisionModel': ([],
                          ['e_score_correction_bias',
                           'mlp.gate.weight',
                           'post_attention_residual_gate',
                           'post_feedforward_residual_gate']),
 'Nemotron3_5TranscribeModel': ([], ['audio_tower', 'multi_modal_projector']),
 'NemotronHForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'NemotronHModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'NemotronHPreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'OpenAIPrivacyFilterForTokenClassification': ([], ['sinks']),
 'OpenAIPrivacyFilterModel': ([], ['sinks']),
 'OpenAIPrivacyFilterPreTrainedModel': ([], ['sinks']),
 'PocketTTSForConditionalGeneration': ([], ['freqs', 'latent_mean', 'latent_std']),
 'Pop2PianoForConditionalGeneration': (['wo'], []),
 'Pop2PianoPreTrainedModel': (['wo'], []),
 'Pop2PianoStack': (['wo'], []),
 'RwkvForCausalLM': (['time_decay', 'time_first'], []),
 'RwkvModel': (['time_decay', 'time_first'], []),
 'RwkvPreTrainedModel': (['time_decay', 'time_first'], []),
 'SLANeXtBackbone': ([], ['structure_attention_cell', 'structure_generator']),
 'SLANeXtForTableRecognition': ([], ['structure_attention_cell', 'structure_generator']),
 'SLANeXtPreTrainedModel': ([], ['structure_attention_cell', 'structure_generator']),
 'SLANeXtSLAHead': ([], ['structure_attention_cell', 'structure_generator']),
 'SLANeXtVisionEncoder': ([], ['structure_attention_cell', 'structure_generator']),
 'SolarOpenForCausalLM': ([], ['e_score_correction_bias', 'gate.weight']),
 'SolarOpenModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'SolarOpenPreTrainedModel': ([], ['e_score_correction_bias', 'gate.weight']),
 'T5EncoderModel': (['wo'], []),
 'T5ForConditionalGeneration': (['wo'], []),
 'T5ForQuestionAnswering': (['wo'], []),
 'T5ForSequenceClassification': (['wo'], []),
 'T5ForTokenClassification': (['wo'], []),
 'T5Model': (['wo'], []),
 'T5PreTrainedModel': (['wo'], []),
 'T5Stack': (['wo'], []),
 'UMT5EncoderModel': (['wo'], []),
 'UMT5ForConditionalGeneration': (['wo'], []),
 'UMT5ForQuestionAnswering': (['wo'], []),
 'UMT5ForSequenceClassification': (['wo'], []),
 'UMT5ForTokenClassification': (['wo'], []),
 'UMT5Model': (['wo'], []),
 'UMT5PreTrainedModel': (['wo'], []),
 'UMT5Stack': (['wo'], []),
 'UdopEncoderModel': (['wo'], []),
 'UdopForConditionalGeneration': (['wo'], []),
 'UdopModel': (['wo'], []),
 'UdopPreTrainedModel': (['wo'], []),
 'UdopStack': (['wo'], []),
 'UnlimitedOcrTextModel': ([], ['gate.weight']),
 'UnlimitedOcrTextPreTrainedModel': ([], ['gate.weight']),
 'VoxtralForConditionalGeneration': ([], ['embed_positions'])}
# class -> _keep_in_fp32_modules, for the classes that list any
DIFFUSERS = {'AnyFlowFARTransformer3DModel': ['norm1', 'norm2', 'norm3', 'scale_shift_table', 'time_embedder'],
 'AnyFlowTransformer3DModel': ['norm1', 'norm2', 'norm3', 'scale_shift_table', 'time_embedder'],
 'AutoencoderKLMiniMaxH3': ['encoder', 'norm1', 'norm2', 'norm_out', 'quant_conv', 'scale1', 'scale2'],
 'AutoencoderKLMiniMaxH3Audio': ['dec_in_proj', 'decoder', 'encoder', 'logs_proj', 'mean_proj', 'pre_block'],
 'ChronoEditTransformer3DModel': ['norm1', 'norm2', 'norm3', 'scale_shift_table', 'time_embedder'],
 'Cosmos3OmniTransformer': ['time_embedder'],
 'CosmosControlNetModel': ['learnable_pos_embed'],
 'CosmosTransformer3DModel': ['learnable_pos_embed'],
 'Flux3Transformer2DModel': ['norm_k', 'norm_q'],
 'HeliosTransformer3DModel': ['history_key_scale', 'norm1', 'norm2', 'norm3', 'scale_shift_table', 'time_embedder'],
 'JoyImageEditPlusTransformer3DModel': ['norm1', 'norm2', 'norm_out', 'time_embedder'],
 'JoyImageEditTransformer3DModel': ['norm1', 'norm2', 'norm_out', 'time_embedder'],
 'Kandinsky5Transformer3DModel': ['modulation', 'text_modulation', 'time_embeddings', 'visual_modulation'],
 'Kandinsky6SRTransformer3DModel': ['modulation', 'pooled_bias', 'time_embeddings'],
 'Kandinsky6Transformer3DModel': ['modulation', 'time_embeddings'],
 'Krea2Transformer2DModel': ['norm', 'norm1', 'norm2', 'norm_k', 'norm_q'],
 'MiniMaxH3Transformer3DModel': ['audio_proj_in', 'audio_proj_out', 'proj_in', 'proj_out', 'rope', 'time_embedder'],
 'RFD4ProteinaAutoencoder': ['latent_decoder_mean_n_log_scale', 'norm'],
 'RFD4ProteinaTransformer': ['cond_factory', 'ln_out', 'norm'],
 'SkyReelsV2Transformer3DModel': ['norm1', 'norm2', 'norm3', 'rope', 'scale_shift_table', 'time_embedder'],
 'WanAnimate2Transformer3DModel': ['modulation',
                                   'norm1',
                                   'norm2',
                                   'norm3',
                                   'scale_shift_table',
                                   'time_embedding',
                                   'time_projection'],
 'WanAnimateTransformer3DModel': ['motion_synthesis_weight',
                                  'norm1',
                                  'norm2',
                                  'norm3',
                                  'rope',
                                  'scale_shift_table',
                                  'time_embedder'],
 'WanTransformer3DModel': ['norm1', 'norm2', 'norm3', 'rope', 'scale_shift_table', 'time_embedder'],
 'WanVACETransformer3DModel': ['norm1', 'norm2', 'norm3', 'rope', 'scale_shift_table', 'time_embedder']}
# Every model class: one not listed above keeps nothing in float32
TRANSFORMERS_CLASSES = frozenset("""
ASTForAudioClassification ASTModel ASTPreTrainedModel AXK1ForCausalLM AXK1ForSequenceClassification
AXK1ForTokenClassification AXK1Model AXK1PreTrainedModel AXK2ForCausalLM AXK2ForSequenceClassification
AXK2ForTokenClassification AXK2Model AXK2PreTrainedModel AfmoeForCausalLM AfmoeModel AfmoePreTrainedModel Aimv2Model
Aimv2PreTrainedModel Aimv2TextModel Aimv2VisionModel AlbertForMaskedLM AlbertForMultipleChoice AlbertForPreTraining
AlbertForQuestionAnswering AlbertForSequenceClassification AlbertForTokenClassification AlbertModel
AlbertPreTrainedModel AlignModel AlignPreTrainedModel AlignTextModel AlignVisionModel AltCLIPModel
AltCLIPPreTrainedModel AltCLIPTextModel AltCLIPVisionModel AltRobertaModel Apertus1p5ForConditionalGeneration
Apertus1p5Model Apertus1p5PreTrainedModel Apertus1p5TextForCausalLM Apertus1p5TextModel
Apertus1p5TextPreTrainedModel Apertus1p5VisionTokenizerModel Apertus1p5VisionTokenizerPreTrainedModel
ApertusForCausalLM ApertusForTokenClassification ApertusModel ApertusPreTrainedModel ArceeForCausalLM
ArceeForQuestionAnswering ArceeForSequenceClassification ArceeForTokenClassification ArceeModel ArceePreTrainedModel
AriaForConditionalGeneration AriaModel AriaPreTrainedModel AriaTextForCausalLM AriaTextModel AriaTextPreTrainedModel
AudioFlamingo3Encoder AudioFlamingo3ForConditionalGeneration AudioFlamingo3Model AudioFlamingo3PreTrainedModel
AutoformerDecoder AutoformerEncoder AutoformerForPrediction AutoformerModel AutoformerPreTrainedModel
AyaVisionForConditionalGeneration AyaVisionModel AyaVisionPreTrainedModel BailingHybridForCausalLM
BailingHybridModel BailingHybridPreTrainedModel BambaForCausalLM BambaModel BambaPreTrainedModel BarkCausalModel
BarkCoarseModel BarkFineModel BarkModel BarkPreTrainedModel BarkSemanticModel BartDecoder BartDecoderWrapper
BartEncoder BartForCausalLM BartForConditionalGeneration BartForQuestionAnswering BartForSequenceClassification
BartModel BartPreTrainedModel BartPretrainedModel BeamForCausalLM BeamForTokenClassification BeamModel
BeamPreTrainedModel BeitBackbone BeitForImageClassification BeitForMaskedImageModeling BeitForSemanticSegmentation
BeitModel BeitPreTrainedModel BertForMaskedLM BertForMultipleChoice BertForNextSentencePrediction BertForPreTraining
BertForQuestionAnswering BertForSequenceClassification BertForTokenClassification BertGenerationDecoder
BertGenerationEncoder BertGenerationPreTrainedModel BertLMHeadModel BertModel BertPreTrainedModel BigBirdForCausalLM
BigBirdForMaskedLM BigBirdForMultipleChoice BigBirdForPreTraining BigBirdForQuestionAnswering
BigBirdForSequenceClassification BigBirdForTokenClassification BigBirdModel BigBirdPegasusDecoder
BigBirdPegasusDecoderWrapper BigBirdPegasusEncoder BigBirdPegasusForCausalLM BigBirdPegasusForConditionalGeneration
BigBirdPegasusForQuestionAnswering BigBirdPegasusForSequenceClassification BigBirdPegasusModel
BigBirdPegasusPreTrainedModel BigBirdPreTrainedModel BioGptForCausalLM BioGptForSequenceClassification
BioGptForTokenClassification BioGptModel BioGptPreTrainedModel BitBackbone BitForImageClassification BitModel
BitNetForCausalLM BitNetModel BitNetPreTrainedModel BitPreTrainedModel BlenderbotDecoder BlenderbotDecoderWrapper
BlenderbotEncoder BlenderbotForCausalLM BlenderbotForConditionalGeneration BlenderbotModel BlenderbotPreTrainedModel
BlenderbotSmallDecoder BlenderbotSmallDecoderWrapper BlenderbotSmallEncoder BlenderbotSmallForCausalLM
BlenderbotSmallForConditionalGeneration BlenderbotSmallModel BlenderbotSmallPreTrainedModel
Blip2ForConditionalGeneration Blip2ForImageTextRetrieval Blip2Model Blip2PreTrainedModel Blip2QFormerModel
Blip2TextModelWithProjection Blip2VisionModel Blip2VisionModelWithProjection BlipForConditionalGeneration
BlipForImageTextRetrieval BlipForQuestionAnswering BlipModel BlipPreTrainedModel BlipTextLMHeadModel BlipTextModel
BlipTextPreTrainedModel BlipVisionModel BloomForCausalLM BloomForQuestionAnswering BloomForSequenceClassification
BloomForTokenClassification BloomModel BloomPreTrainedModel BltForCausalLM BltGlobalTransformer BltLocalDecoder
BltLocalEncoder BltModel BltPatcher BltPreTrainedModel BridgeTowerForContrastiveLearning
BridgeTowerForImageAndTextRetrieval BridgeTowerForMaskedLM BridgeTowerModel BridgeTowerPreTrainedModel
BridgeTowerTextModel BridgeTowerVisionModel BrosEncoder BrosForTokenClassification BrosModel BrosPreTrainedModel
BrosSpadeEEForTokenClassification BrosSpadeELForTokenClassification CHMv2ForDepthEstimation CHMv2PreTrainedModel
CLIPForImageClassification CLIPModel CLIPPreTrainedModel CLIPSegDecoder CLIPSegForImageSegmentation CLIPSegModel
CLIPSegPreTrainedModel CLIPSegTextModel CLIPSegVisionModel CLIPTextModel CLIPTextModelWithProjection CLIPVisionModel
CLIPVisionModelWithProjection CTRLForSequenceClassification CTRLLMHeadModel CTRLModel CTRLPreTrainedModel
CamembertForCausalLM CamembertForMaskedLM CamembertForMultipleChoice CamembertForQuestionAnswering
CamembertForSequenceClassification CamembertForTokenClassification CamembertModel CamembertPreTrainedModel
CanaryDecoder CanaryForConditionalGeneration CanaryModel CanaryPreTrainedModel CanineForMultipleChoice
CanineForQuestionAnswering CanineForSequenceClassification CanineForTokenClassification CanineModel
CaninePreTrainedModel ChameleonForConditionalGeneration ChameleonModel ChameleonPreTrainedModel ChameleonVQVAE
ChineseCLIPModel ChineseCLIPPreTrainedModel ChineseCLIPTextModel ChineseCLIPVisionModel ClapAudioModel
ClapAudioModelWithProjection ClapModel ClapPreTrainedModel ClapTextModel ClapTextModelWithProjection ClvpDecoder
ClvpEncoder ClvpForCausalLM ClvpModel ClvpModelForConditionalGeneration ClvpPreTrainedModel CodeGenForCausalLM
CodeGenModel CodeGenPreTrainedModel Cohere2ForCausalLM Cohere2Model Cohere2MoeForCausalLM Cohere2MoeModel
Cohere2MoePreTrainedModel Cohere2PreTrainedModel Cohere2VisionForConditionalGeneration Cohere2VisionModel
Cohere2VisionPreTrainedModel CohereAsrDecoder CohereAsrForConditionalGeneration CohereAsrModel
CohereAsrPreTrainedModel CohereCompassForCausalLM CohereCompassForConditionalGeneration CohereCompassModel
CohereCompassPreTrainedModel CohereCompassTextForSequenceClassification CohereCompassTextModel
CohereCompassVisionModel CohereForCausalLM CohereModel CoherePreTrainedModel ColModernVBertForRetrieval
ColModernVBertPreTrainedModel ColPaliForRetrieval ColPaliPreTrainedModel ColQwen2ForRetrieval
ColQwen2PreTrainedModel ConditionalDetrDecoder ConditionalDetrEncoder ConditionalDetrForObjectDetection
ConditionalDetrForSegmentation ConditionalDetrModel ConditionalDetrPreTrainedModel ConvBertForMaskedLM
ConvBertForMultipleChoice ConvBertForQuestionAnswering ConvBertForSequenceClassification
ConvBertForTokenClassification ConvBertModel ConvBertPreTrainedModel ConvNextBackbone ConvNextEncoder
ConvNextForImageClassification ConvNextModel ConvNextPreTrainedModel ConvNextV2Backbone ConvNextV2Encoder
ConvNextV2ForImageClassification ConvNextV2Model ConvNextV2PreTrainedModel Cosmos3EdgeForConditionalGeneration
Cosmos3EdgeModel Cosmos3EdgePreTrainedModel Cosmos3EdgeTextModel Cosmos3EdgeVisionModel
Cosmos3OmniForConditionalGeneration Cosmos3OmniModel Cosmos3OmniPreTrainedModel CpmAntForCausalLM CpmAntModel
CpmAntPreTrainedModel CsmBackboneModel CsmDepthDecoderForCausalLM CsmDepthDecoderModel CsmForConditionalGeneration
CsmPreTrainedModel CvtForImageClassification CvtModel CvtPreTrainedModel CwmForCausalLM CwmModel CwmPreTrainedModel
DFineDecoder DFineForObjectDetection DFineHybridEncoder DFineModel DFinePreTrainedModel DINOv3ConvNextBackbone
DINOv3ConvNextEncoder DINOv3ConvNextModel DINOv3ConvNextPreTrainedModel DINOv3ViTBackbone DINOv3ViTEncoder
DINOv3ViTModel DINOv3ViTPreTrainedModel DPRContextEncoder DPREncoder DPRPreTrainedModel DPRPretrainedContextEncoder
DPRPretrainedQuestionEncoder DPRPretrainedReader DPRQuestionEncoder DPRReader DPRSpanPredictor DPTForDepthEstimation
DPTForSemanticSegmentation DPTModel DPTPreTrainedModel DabDetrDecoder DabDetrEncoder DabDetrForObjectDetection
DabDetrModel DabDetrPreTrainedModel DacModel DacPreTrainedModel Data2VecAudioForAudioFrameClassification
Data2VecAudioForCTC Data2VecAudioForSequenceClassification Data2VecAudioForXVector Data2VecAudioModel
Data2VecAudioPreTrainedModel Data2VecTextForCausalLM Data2VecTextForMaskedLM Data2VecTextForMultipleChoice
Data2VecTextForQuestionAnswering Data2VecTextForSequenceClassification Data2VecTextForTokenClassification
Data2VecTextModel Data2VecTextPreTrainedModel Data2VecVisionForImageClassification
Data2VecVisionForSemanticSegmentation Data2VecVisionModel Data2VecVisionPreTrainedModel DbrxForCausalLM DbrxModel
DbrxPreTrainedModel DebertaForMaskedLM DebertaForQuestionAnswering DebertaForSequenceClassification
DebertaForTokenClassification DebertaModel DebertaPreTrainedModel DebertaV2ForMaskedLM DebertaV2ForMultipleChoice
DebertaV2ForQuestionAnswering DebertaV2ForSequenceClassification DebertaV2ForTokenClassification DebertaV2Model
DebertaV2PreTrainedModel DecisionTransformerGPT2Model DecisionTransformerGPT2PreTrainedModel
DecisionTransformerModel DecisionTransformerPreTrainedModel DeepseekOcr2ForConditionalGeneration DeepseekOcr2Model
DeepseekOcr2PreTrainedModel DeepseekOcr2SamVisionEncoder DeepseekOcr2TextModel DeepseekOcr2TextPreTrainedModel
DeepseekOcr2VisionEncoder DeepseekOcr2VisionModel DeepseekV2ForCausalLM DeepseekV2ForSequenceClassification
DeepseekV2Model DeepseekV2PreTrainedModel DeepseekV32ForCausalLM DeepseekV32Model DeepseekV32PreTrainedModel
DeepseekV3ForCausalLM DeepseekV3ForSequenceClassification DeepseekV3ForTokenClassification DeepseekV3Model
DeepseekV3PreTrainedModel DeepseekV4ForCausalLM DeepseekV4Model DeepseekV4PreTrainedModel
DeepseekVLForConditionalGeneration DeepseekVLHybridForConditionalGeneration DeepseekVLHybridModel
DeepseekVLHybridPreTrainedModel DeepseekVLModel DeepseekVLPreTrainedModel DeformableDetrDecoder
DeformableDetrEncoder DeformableDetrForObjectDetection DeformableDetrModel DeformableDetrPreTrainedModel
DeiTForImageClassification DeiTForImageClassificationWithTeacher DeiTForMaskedImageModeling DeiTModel
DeiTPreTrainedModel Deimv2ConvEncoder Deimv2DINOv3ConvEncoder Deimv2Decoder Deimv2ForObjectDetection
Deimv2HybridEncoder Deimv2LiteEncoder Deimv2Model Deimv2PreTrainedModel DepthAnythingForDepthEstimation
DepthAnythingPreTrainedModel DepthProForDepthEstimation DepthProModel DepthProPreTrainedModel DetrDecoder
DetrEncoder DetrForObjectDetection DetrForSegmentation DetrModel DetrPreTrainedModel DiaDecoder DiaEncoder
DiaForConditionalGeneration DiaModel DiaPreTrainedModel DiffLlamaForCausalLM DiffLlamaForQuestionAnswering
DiffLlamaForSequenceClassification DiffLlamaForTokenClassification DiffLlamaModel DiffLlamaPreTrainedModel
DiffusionGemmaDecoderModel DiffusionGemmaEncoderModel DiffusionGemmaEncoderTextModel DiffusionGemmaForBlockDiffusion
DiffusionGemmaModel DiffusionGemmaPreTrainedModel DinatBackbone DinatForImageClassification DinatModel
DinatPreTrainedModel Dinov2Backbone Dinov2Encoder Dinov2ForImageClassification Dinov2Model Dinov2PreTrainedModel
Dinov2WithRegistersBackbone Dinov2WithRegistersEncoder Dinov2WithRegistersForImageClassification
Dinov2WithRegistersModel Dinov2WithRegistersPreTrainedModel DistilBertForMaskedLM DistilBertForMultipleChoice
DistilBertForQuestionAnswering DistilBertForSequenceClassification DistilBertForTokenClassification DistilBertModel
DistilBertPreTrainedModel DogeForCausalLM DogeForSequenceClassification DogeModel DogePreTrainedModel
DonutSwinForImageClassification DonutSwinModel DonutSwinPreTrainedModel DoryForCausalLM DoryModel
DoryPreTrainedModel Dots1ForCausalLM Dots1Model Dots1PreTrainedModel Dots3NoteAudioModel
Dots3NoteAudioPreTrainedModel Dots3NoteForCausalLM Dots3NoteForConditionalGeneration Dots3NoteModel
Dots3NotePreTrainedModel Dots3NoteTextModel Dots3NoteVisionModel Dots3NoteVisionPreTrainedModel EdgeTamModel
EdgeTamPreTrainedModel EdgeTamVideoModel EdgeTamVideoPreTrainedModel EdgeTamVisionModel
EfficientLoFTRForKeypointMatching EfficientLoFTRModel EfficientLoFTRPreTrainedModel
EfficientNetForImageClassification EfficientNetModel EfficientNetPreTrainedModel ElectraForCausalLM
ElectraForMaskedLM ElectraForMultipleChoice ElectraForPreTraining ElectraForQuestionAnswering
ElectraForSequenceClassification ElectraForTokenClassification ElectraModel ElectraPreTrainedModel
EmbeddingGemma2Model EmbeddingGemma2PreTrainedModel EmbeddingGemma2TextModel Emu3ForCausalLM
Emu3ForConditionalGeneration Emu3Model Emu3PreTrainedModel Emu3TextModel Emu3VQVAE EncodecModel
EncodecPreTrainedModel EncoderDecoderModel EomtDinov3ForUniversalSegmentation EomtDinov3PreTrainedModel
EomtForUniversalSegmentation EomtPreTrainedModel Ernie4_5ForCausalLM Ernie4_5Model Ernie4_5PreTrainedModel
Ernie4_5_MoeForCausalLM Ernie4_5_MoeModel Ernie4_5_MoePreTrainedModel Ernie4_5_VLMoeForConditionalGeneration
Ernie4_5_VLMoeModel Ernie4_5_VLMoePreTrainedModel Ernie4_5_VLMoeTextModel
Ernie4_5_VLMoeVisionTransformerPretrainedModel Ernie4_5_VL_MoeForConditionalGeneration Ernie4_5_VL_MoeModel
Ernie4_5_VL_MoePreTrainedModel Ernie4_5_VL_MoeTextModel Ernie4_5_VL_MoeVisionTransformerPretrainedModel
ErnieForCausalLM ErnieForMaskedLM ErnieForMultipleChoice ErnieForNextSentencePrediction ErnieForPreTraining
ErnieForQuestionAnswering ErnieForSequenceClassification ErnieForTokenClassification ErnieModel ErniePreTrainedModel
EsmFold2Model EsmFold2PreTrainedModel EsmFoldPreTrainedModel EsmForMaskedLM EsmForProteinFolding
EsmForSequenceClassification EsmForTokenClassification EsmModel EsmPreTrainedModel EsmcForMaskedLM
EsmcForSequenceClassification EsmcForTokenClassification EsmcModel EsmcPreTrainedModel EuroBertForMaskedLM
EuroBertForSequenceClassification EuroBertForTokenClassification EuroBertModel EuroBertPreTrainedModel
EvollaForProteinText2Text EvollaModel EvollaPreTrainedModel EvollaSaProtPreTrainedModel EvollaSaProtProteinEncoder
Exaone4ForCausalLM Exaone4ForQuestionAnswering Exaone4ForSequenceClassification Exaone4ForTokenClassification
Exaone4Model Exaone4PreTrainedModel Exaone4_5_ForConditionalGeneration Exaone4_5_Model Exaone4_5_PreTrainedModel
Exaone4_5_VisionModel ExaoneMoeForCausalLM ExaoneMoeModel ExaoneMoePreTrainedModel FNetForMaskedLM
FNetForMultipleChoice FNetForNextSentencePrediction FNetForPreTraining FNetForQuestionAnswering
FNetForSequenceClassification FNetForTokenClassification FNetModel FNetPreTrainedModel FSMTForConditionalGeneration
FSMTModel FalconForCausalLM FalconForQuestionAnswering FalconForSequenceClassification FalconForTokenClassification
FalconH1ForCausalLM FalconH1Model FalconH1PreTrainedModel FalconMambaForCausalLM FalconMambaModel
FalconMambaPreTrainedModel FalconModel FalconPreTrainedModel FastSpeech2ConformerHifiGan FastSpeech2ConformerModel
FastSpeech2ConformerPreTrainedModel FastSpeech2ConformerWithHifiGan FastVlmForConditionalGeneration FastVlmModel
FastVlmPreTrainedModel FlaubertForMultipleChoice FlaubertForQuestionAnswering FlaubertForQuestionAnsweringSimple
FlaubertForSequenceClassification FlaubertForTokenClassification FlaubertModel FlaubertPreTrainedModel
FlaubertWithLMHeadModel FlavaForPreTraining FlavaImageCodebook FlavaImageModel FlavaModel FlavaMultimodalModel
FlavaPreTrainedModel FlavaTextModel FlexOlmoForCausalLM FlexOlmoModel FlexOlmoPreTrainedModel FlintForCausalLM
FlintModel FlintPreTrainedModel Florence2ForConditionalGeneration Florence2Model Florence2PreTrainedModel
Florence2VisionBackbone Florence2VisionPreTrainedModel FocalNetBackbone FocalNetForImageClassification
FocalNetForMaskedImageModeling FocalNetModel FocalNetPreTrainedModel FunAsrNanoEncoder
FunAsrNanoForConditionalGeneration FunAsrNanoModel FunAsrNanoPreTrainedModel FunnelBaseModel FunnelForMaskedLM
FunnelForMultipleChoice FunnelForPreTraining FunnelForQuestionAnswering FunnelForSequenceClassification
FunnelForTokenClassification FunnelModel FunnelPreTrainedModel FuyuForCausalLM FuyuModel FuyuPreTrainedModel
GLPNForDepthEstimation GLPNModel GLPNPreTrainedModel GPT2DoubleHeadsModel GPT2ForQuestionAnswering
GPT2ForSequenceClassification GPT2ForTokenClassification GPT2LMHeadModel GPT2Model GPT2PreTrainedModel
GPTBigCodeForCausalLM GPTBigCodeForSequenceClassification GPTBigCodeForTokenClassification GPTBigCodeModel
GPTBigCodePreTrainedModel GPTJForCausalLM GPTJForQuestionAnswering GPTJForSequenceClassification GPTJModel
GPTJPreTrainedModel GPTNeoForCausalLM GPTNeoForQuestionAnswering GPTNeoForSequenceClassification
GPTNeoForTokenClassification GPTNeoModel GPTNeoPreTrainedModel GPTNeoXForCausalLM GPTNeoXForQuestionAnswering
GPTNeoXForSequenceClassification GPTNeoXForTokenClassification GPTNeoXJapaneseForCausalLM GPTNeoXJapaneseModel
GPTNeoXJapanesePreTrainedModel GPTNeoXModel GPTNeoXPreTrainedModel Gemma2ForCausalLM Gemma2ForSequenceClassification
Gemma2ForTokenClassification Gemma2Model Gemma2PreTrainedModel Gemma3ForCausalLM Gemma3ForConditionalGeneration
Gemma3ForSequenceClassification Gemma3Model Gemma3PreTrainedModel Gemma3TextForSequenceClassification
Gemma3TextModel Gemma3nAudioEncoder Gemma3nForCausalLM Gemma3nForConditionalGeneration Gemma3nModel
Gemma3nPreTrainedModel Gemma3nTextModel Gemma4AssistantForCausalLM Gemma4AssistantPreTrainedModel Gemma4AudioModel
Gemma4ForCausalLM Gemma4ForConditionalGeneration Gemma4Model Gemma4PreTrainedModel Gemma4TextModel
Gemma4UnifiedAssistantForCausalLM Gemma4UnifiedAssistantPreTrainedModel Gemma4UnifiedForCausalLM
Gemma4UnifiedForConditionalGeneration Gemma4UnifiedModel Gemma4UnifiedPreTrainedModel Gemma4UnifiedTextModel
Gemma4VisionModel GemmaForCausalLM GemmaForSequenceClassification GemmaForTokenClassification GemmaModel
GemmaPreTrainedModel GitForCausalLM GitModel GitPreTrainedModel GitVisionModel Glm46VForConditionalGeneration
Glm46VModel Glm46VPreTrainedModel Glm4ForCausalLM Glm4ForSequenceClassification Glm4ForTokenClassification Glm4Model
Glm4MoeForCausalLM Glm4MoeLiteForCausalLM Glm4MoeLiteModel Glm4MoeLitePreTrainedModel Glm4MoeModel
Glm4MoePreTrainedModel Glm4PreTrainedModel Glm4vForConditionalGeneration Glm4vModel Glm4vMoeForConditionalGeneration
Glm4vMoeModel Glm4vMoePreTrainedModel Glm4vMoeTextModel Glm4vMoeVisionModel Glm4vPreTrainedModel Glm4vTextModel
Glm4vVisionModel Glm5NextForConditionalGeneration Glm5NextModel Glm5NextPreTrainedModel Glm5NextTextModel
Glm5NextVisionModel GlmAsrEncoder GlmAsrForConditionalGeneration GlmAsrModel GlmAsrPreTrainedModel GlmForCausalLM
GlmForSequenceClassification GlmForTokenClassification GlmImageForConditionalGeneration GlmImageModel
GlmImagePreTrainedModel GlmImageTextModel GlmImageVQVAE GlmImageVisionModel GlmModel GlmMoeDsaForCausalLM
GlmMoeDsaModel GlmMoeDsaPreTrainedModel GlmOcrForConditionalGeneration GlmOcrModel GlmOcrPreTrainedModel
GlmOcrTextModel GlmOcrVisionModel GlmPreTrainedModel GotOcr2ForConditionalGeneration GotOcr2Model
GotOcr2PreTrainedModel GotOcr2VisionEncoder GptOssForCausalLM GptOssForSequenceClassification
GptOssForTokenClassification GptOssModel GptOssPreTrainedModel GradiumPhononTTSForConditionalGeneration
GradiumPhononTTSModel GradiumPhononTTSPreTrainedModel Granite4VisionForConditionalGeneration Granite4VisionModel
Granite4VisionPreTrainedModel Granite4VisionTextModel GraniteDoclingForConditionalGeneration GraniteDoclingModel
GraniteDoclingPreTrainedModel GraniteDoclingTextModel GraniteDoclingTextPreTrainedModel GraniteDoclingVisionModel
GraniteForCausalLM GraniteModel GraniteMoeForCausalLM GraniteMoeHybridForCausalLM GraniteMoeHybridModel
GraniteMoeHybridPreTrainedModel GraniteMoeModel GraniteMoePreTrainedModel GraniteMoeSWAForCausalLM
GraniteMoeSWAModel GraniteMoeSWAPreTrainedModel GraniteMoeSharedForCausalLM GraniteMoeSharedModel
GraniteMoeSharedPreTrainedModel GranitePreTrainedModel GraniteSWAForCausalLM GraniteSWAModel
GraniteSWAPreTrainedModel GraniteSpeech5Encoder GraniteSpeech5ForCTC GraniteSpeech5PreTrainedModel
GraniteSpeechCTCEncoder GraniteSpeechForConditionalGeneration GraniteSpeechModel GraniteSpeechPlusCTCEncoder
GraniteSpeechPlusForConditionalGeneration GraniteSpeechPlusModel GraniteSpeechPlusPreTrainedModel
GraniteSpeechPreTrainedModel GroundingDinoDecoder GroundingDinoEncoder GroundingDinoForObjectDetection
GroundingDinoModel GroundingDinoPreTrainedModel GroupViTModel GroupViTPreTrainedModel GroupViTTextModel
GroupViTTextTransformer GroupViTVisionModel GteForMaskedLM GteForSequenceClassification GteForTokenClassification
GteModel GtePreTrainedModel HGNetV2Backbone HGNetV2ForImageClassification HGNetV2PreTrainedModel HYV3ForCausalLM
HYV3Model HYV3PreTrainedModel HYV4ForCausalLM HYV4Model HYV4PreTrainedModel HYV4VLForConditionalGeneration
HYV4VLModel HYV4VLPreTrainedModel HYV4VLTextModel HYV4VLVisionModel HeliumForCausalLM
HeliumForSequenceClassification HeliumForTokenClassification HeliumModel HeliumPreTrainedModel HieraBackbone
HieraForImageClassification HieraForPreTraining HieraModel HieraPreTrainedModel HiggsAudioV2ForConditionalGeneration
HiggsAudioV2Model HiggsAudioV2PreTrainedModel HrmTextForCausalLM HrmTextModel HrmTextPreTrainedModel HubertForCTC
HubertForSequenceClassification HubertModel HubertPreTrainedModel HunYuanDenseV1ForCausalLM
HunYuanDenseV1ForSequenceClassification HunYuanDenseV1Model HunYuanDenseV1PreTrainedModel HunYuanMoEV1ForCausalLM
HunYuanMoEV1ForSequenceClassification HunYuanMoEV1Model HunYuanMoEV1PreTrainedModel
HunYuanVLForConditionalGeneration HunYuanVLModel HunYuanVLPreTrainedModel HunYuanVLTextModel
HunYuanVLVisionTransformer HyperCLOVAXForCausalLM HyperCLOVAXModel HyperCLOVAXPreTrainedModel
HyperCLOVAXVisionV2ForConditionalGeneration HyperCLOVAXVisionV2Model HyperCLOVAXVisionV2PreTrainedModel
IBertForMaskedLM IBertForMultipleChoice IBertForQuestionAnswering IBertForSequenceClassification
IBertForTokenClassification IBertModel IBertPreTrainedModel IJepaForImageClassification IJepaModel
IJepaPreTrainedModel Idefics2ForConditionalGeneration Idefics2Model Idefics2PerceiverResampler
Idefics2PreTrainedModel Idefics2VisionTransformer Idefics3ForConditionalGeneration Idefics3Model
Idefics3PreTrainedModel Idefics3VisionTransformer IdeficsForVisionText2Text IdeficsModel IdeficsPreTrainedModel
ImageGPTForCausalImageModeling ImageGPTForImageClassification ImageGPTModel ImageGPTPreTrainedModel InformerDecoder
InformerEncoder InformerForPrediction InformerModel InformerPreTrainedModel Inkling2ForCausalLM
Inkling2ForConditionalGeneration Inkling2LoopForCausalLM Inkling2LoopForConditionalGeneration Inkling2LoopModel
Inkling2LoopPreTrainedModel Inkling2LoopTextModel Inkling2Model Inkling2PreTrainedModel Inkling2TextModel
Inkling2VisionModel InklingAudioModel InklingForCausalLM InklingForConditionalGeneration InklingModel
InklingPreTrainedModel InklingTextModel InklingVisionModel InstructBlipForConditionalGeneration InstructBlipModel
InstructBlipPreTrainedModel InstructBlipQFormerModel InstructBlipVideoForConditionalGeneration
InstructBlipVideoModel InstructBlipVideoPreTrainedModel InstructBlipVideoQFormerModel InstructBlipVideoVisionModel
InstructBlipVisionModel InternVLForConditionalGeneration InternVLModel InternVLPreTrainedModel InternVLVisionModel
InternVLVisionPreTrainedModel Jais2ForCausalLM Jais2Model Jais2PreTrainedModel JambaForCausalLM
JambaForSequenceClassification JambaModel JambaPreTrainedModel JanusForConditionalGeneration JanusModel
JanusPreTrainedModel JanusVQVAE JanusVisionModel JetMoeForCausalLM JetMoeForSequenceClassification JetMoeModel
JetMoePreTrainedModel JevForDecision JevPreTrainedModel JinaEmbeddingsV3ForMaskedLM
JinaEmbeddingsV3ForQuestionAnswering JinaEmbeddingsV3ForSequenceClassification
JinaEmbeddingsV3ForTokenClassification JinaEmbeddingsV3Model JinaEmbeddingsV3PreTrainedModel KimiLinearForCausalLM
KimiLinearModel KimiLinearPreTrainedModel Kimi_K25ForConditionalGeneration Kimi_K25Model Kimi_K25PreTrainedModel
Kimi_K25VisionModel Kolibri1ForCausalLM Kolibri1Model Kolibri1PreTrainedModel Kosmos2ForConditionalGeneration
Kosmos2Model Kosmos2PreTrainedModel Kosmos2TextForCausalLM Kosmos2TextModel Kosmos2TextTransformer
Kosmos2VisionModel Kosmos2VisionTransformer Kosmos2_5ForConditionalGeneration Kosmos2_5Model
Kosmos2_5PreTrainedModel Kosmos2_5TextForCausalLM Kosmos2_5TextModel Kosmos2_5TextTransformer Kosmos2_5VisionEncoder
Kosmos2_5VisionModel KyutaiSpeechToTextForConditionalGeneration KyutaiSpeechToTextModel
KyutaiSpeechToTextPreTrainedModel LEDDecoder LEDEncoder LEDForConditionalGeneration LEDForQuestionAnswering LEDModel
LEDPreTrainedModel LagunaForCausalLM LagunaModel LagunaPreTrainedModel LaraMiniForCausalLM LaraMiniModel
LaraMiniPreTrainedModel LasrEncoder LasrForCTC LasrPreTrainedModel LayoutLMForMaskedLM LayoutLMForQuestionAnswering
LayoutLMForSequenceClassification LayoutLMForTokenClassification LayoutLMModel LayoutLMPreTrainedModel
LayoutLMv2ForQuestionAnswering LayoutLMv2ForSequenceClassification LayoutLMv2ForTokenClassification LayoutLMv2Model
LayoutLMv2PreTrainedModel LayoutLMv3ForQuestionAnswering LayoutLMv3ForSequenceClassification
LayoutLMv3ForTokenClassification LayoutLMv3Model LayoutLMv3PreTrainedModel LevitForImageClassification
LevitForImageClassificationWithTeacher LevitModel LevitPreTrainedModel Lfm2ForCausalLM Lfm2Model Lfm2MoeForCausalLM
Lfm2MoeModel Lfm2MoePreTrainedModel Lfm2PreTrainedModel Lfm2VlForConditionalGeneration Lfm2VlModel
Lfm2VlPreTrainedModel Lfm3ForCausalLM Lfm3Model Lfm3PreTrainedModel Lfm3VlForConditionalGeneration Lfm3VlModel
Lfm3VlPreTrainedModel Lfm3VlVisionModel LightGlueForKeypointMatching LightGluePreTrainedModel
LightOnOcrForConditionalGeneration LightOnOcrModel LightOnOcrPreTrainedModel LiltForQuestionAnswering
LiltForSequenceClassification LiltForTokenClassification LiltModel LiltPreTrainedModel Llama4ForCausalLM
Llama4ForConditionalGeneration Llama4PreTrainedModel Llama4TextModel Llama4VisionModel LlamaForCausalLM
LlamaForQuestionAnswering LlamaForSequenceClassification LlamaForTokenClassification LlamaModel LlamaPreTrainedModel
LlavaForConditionalGeneration LlavaModel LlavaNextForConditionalGeneration LlavaNextModel LlavaNextPreTrainedModel
LlavaNextVideoForConditionalGeneration LlavaNextVideoModel LlavaNextVideoPreTrainedModel
LlavaOnevisionForConditionalGeneration LlavaOnevisionModel LlavaOnevisionPreTrainedModel LlavaPreTrainedModel
LongT5EncoderModel LongT5ForConditionalGeneration LongT5Model LongT5PreTrainedModel LongT5Stack
LongcatFlashForCausalLM LongcatFlashModel LongcatFlashPreTrainedModel LongformerForMaskedLM
LongformerForMultipleChoice LongformerForQuestionAnswering LongformerForSequenceClassification
LongformerForTokenClassification LongformerModel LongformerPreTrainedModel LukeForEntityClassification
LukeForEntityPairClassification LukeForEntitySpanClassification LukeForMaskedLM LukeForMultipleChoice
LukeForQuestionAnswering LukeForSequenceClassification LukeForTokenClassification LukeModel LukePreTrainedModel
LwDetrDecoder LwDetrForObjectDetection LwDetrModel LwDetrPreTrainedModel LwDetrViTBackbone LwDetrViTEncoder
LwDetrViTPreTrainedModel LxmertForPreTraining LxmertForQuestionAnswering LxmertModel LxmertPreTrainedModel
M2M100Decoder M2M100Encoder M2M100ForConditionalGeneration M2M100Model M2M100PreTrainedModel MBartDecoder
MBartDecoderWrapper MBartEncoder MBartForCausalLM MBartForConditionalGeneration MBartForQuestionAnswering
MBartForSequenceClassification MBartModel MBartPreTrainedModel MLCDPreTrainedModel MLCDVisionModel
MMGroundingDinoDecoder MMGroundingDinoEncoder MMGroundingDinoForObjectDetection MMGroundingDinoModel
MMGroundingDinoPreTrainedModel MPNetForMaskedLM MPNetForMultipleChoice MPNetForQuestionAnswering
MPNetForSequenceClassification MPNetForTokenClassification MPNetModel MPNetPreTrainedModel MT5EncoderModel
MT5ForConditionalGeneration MT5ForQuestionAnswering MT5ForSequenceClassification MT5ForTokenClassification MT5Model
MT5PreTrainedModel MT5Stack Mamba2ForCausalLM Mamba2Model Mamba2PreTrainedModel MambaForCausalLM MambaModel
MambaPreTrainedModel MarianDecoder MarianDecoderWrapper MarianEncoder MarianForCausalLM MarianMTModel MarianModel
MarianPreTrainedModel MarkupLMForQuestionAnswering MarkupLMForSequenceClassification MarkupLMForTokenClassification
MarkupLMModel MarkupLMPreTrainedModel Mask2FormerForUniversalSegmentation Mask2FormerModel
Mask2FormerPreTrainedModel MaskFormerDetrDecoder MaskFormerDetrPreTrainedModel MaskFormerForInstanceSegmentation
MaskFormerModel MaskFormerPreTrainedModel MaskFormerSwinBackbone MaskFormerSwinModel MaskFormerSwinPreTrainedModel
MegatronBertForCausalLM MegatronBertForMaskedLM MegatronBertForMultipleChoice MegatronBertForNextSentencePrediction
MegatronBertForPreTraining MegatronBertForQuestionAnswering MegatronBertForSequenceClassification
MegatronBertForTokenClassification MegatronBertModel MegatronBertPreTrainedModel MellumForCausalLM MellumModel
MellumPreTrainedModel MetaClip2ForImageClassification MetaClip2Model MetaClip2PreTrainedModel MetaClip2TextModel
MetaClip2TextModelWithProjection MetaClip2VisionModel MetaClip2VisionModelWithProjection
MgpstrForSceneTextRecognition MgpstrModel MgpstrPreTrainedModel MiMoV2FlashForCausalLM MiMoV2FlashModel
MiMoV2FlashPreTrainedModel MimiDecoderModel MimiEncoderModel MimiModel MimiPreTrainedModel MiniCPM3ForCausalLM
MiniCPM3ForSequenceClassification MiniCPM3Model MiniCPM3PreTrainedModel MiniCPMOcrForConditionalGeneration
MiniCPMOcrModel MiniCPMOcrPreTrainedModel MiniCPMOcrVisionModel MiniCPMOcrVisionPreTrainedModel
MiniCPMV4_6ForConditionalGeneration MiniCPMV4_6Model MiniCPMV4_6PreTrainedModel MiniCPMV4_6VisionModel
MiniCPMV4_6VisionPreTrainedModel MiniCPMV4_7ForConditionalGeneration MiniCPMV4_7Model MiniCPMV4_7PreTrainedModel
MiniCPMV4_7VisionModel MiniCPMV4_7VisionPreTrainedModel MiniMaxForCausalLM MiniMaxForQuestionAnswering
MiniMaxForSequenceClassification MiniMaxForTokenClassification MiniMaxM2ForCausalLM MiniMaxM2Model
MiniMaxM2PreTrainedModel MiniMaxM3SparseForConditionalGeneration MiniMaxM3VLForCausalLM MiniMaxM3VLModel
MiniMaxM3VLPreTrainedModel MiniMaxM3VLTextModel MiniMaxM3VLVisionModel MiniMaxModel MiniMaxPreTrainedModel
Ministral3ForCausalLM Ministral3ForQuestionAnswering Ministral3ForSequenceClassification
Ministral3ForTokenClassification Ministral3Model Ministral3PreTrainedModel MinistralForCausalLM
MinistralForQuestionAnswering MinistralForSequenceClassification MinistralForTokenClassification MinistralModel
MinistralPreTrainedModel Mistral3ForConditionalGeneration Mistral3Model Mistral3PreTrainedModel Mistral4ForCausalLM
Mistral4ForSequenceClassification Mistral4ForTokenClassification Mistral4Model Mistral4PreTrainedModel
MistralForCausalLM MistralForQuestionAnswering MistralForSequenceClassification MistralForTokenClassification
MistralLarge4ForConditionalGeneration MistralLarge4Model MistralLarge4PreTrainedModel MistralLarge4TextModel
MistralModel MistralPreTrainedModel MixtralForCausalLM MixtralForQuestionAnswering MixtralForSequenceClassification
MixtralForTokenClassification MixtralModel MixtralPreTrainedModel MllamaForCausalLM MllamaForConditionalGeneration
MllamaModel MllamaPreTrainedModel MllamaTextModel MllamaVisionModel MobileBertForMaskedLM
MobileBertForMultipleChoice MobileBertForNextSentencePrediction MobileBertForPreTraining
MobileBertForQuestionAnswering MobileBertForSequenceClassification MobileBertForTokenClassification MobileBertModel
MobileBertPreTrainedModel MobileNetV1ForImageClassification MobileNetV1Model MobileNetV1PreTrainedModel
MobileNetV2ForImageClassification MobileNetV2ForSemanticSegmentation MobileNetV2Model MobileNetV2PreTrainedModel
MobileViTForImageClassification MobileViTForSemanticSegmentation MobileViTModel MobileViTPreTrainedModel
MobileViTV2ForImageClassification MobileViTV2ForSemanticSegmentation MobileViTV2Model MobileViTV2PreTrainedModel
ModernBertDecoderForCausalLM ModernBertDecoderForSequenceClassification ModernBertDecoderModel
ModernBertDecoderPreTrainedModel ModernBertForMaskedLM ModernBertForMultipleChoice ModernBertForQuestionAnswering
ModernBertForSequenceClassification ModernBertForTokenClassification ModernBertModel ModernBertPreTrainedModel
ModernVBertForMaskedLM ModernVBertForSequenceClassification ModernVBertForTokenClassification ModernVBertModel
ModernVBertPreTrainedModel Molmo2Adapter Molmo2ForConditionalGeneration Molmo2Model Molmo2PreTrainedModel
Molmo2TextModel Molmo2VisionModel MoonshineDecoder MoonshineEncoder MoonshineForConditionalGeneration MoonshineModel
MoonshinePreTrainedModel MoonshineStreamingDecoder MoonshineStreamingEncoder
MoonshineStreamingForConditionalGeneration MoonshineStreamingModel MoonshineStreamingPreTrainedModel
MoshiDepthDecoder MoshiForCausalLM MoshiForConditionalGeneration MoshiModel MoshiPreTrainedModel
MossTranscribeDiarizeAudioModel MossTranscribeDiarizeForConditionalGeneration MossTranscribeDiarizeModel
MossTranscribeDiarizePreTrainedModel MptForCausalLM MptForQuestionAnswering MptForSequenceClassification
MptForTokenClassification MptModel MptPreTrainedModel MraForMaskedLM MraForMultipleChoice MraForQuestionAnswering
MraForSequenceClassification MraForTokenClassification MraModel MraPreTrainedModel MuseGlimmerAssistantModel
MuseGlimmerAssistantPreTrainedModel MuseGlimmerForConditionalGeneration MuseGlimmerModel MuseGlimmerPreTrainedModel
MuseGlimmerTextModel MuseGlimmerVisionModel MuseSparkAudioModel MuseSparkForConditionalGeneration MuseSparkModel
MuseSparkPreTrainedModel MuseSparkTextModel MuseSparkVisionModel MusicFlamingoForConditionalGeneration
MusicFlamingoModel MusicFlamingoPreTrainedModel MusicgenDecoder MusicgenForCausalLM MusicgenForConditionalGeneration
MusicgenMelodyDecoder MusicgenMelodyForCausalLM MusicgenMelodyForConditionalGeneration MusicgenMelodyModel
MusicgenMelodyPreTrainedModel MusicgenModel MusicgenPreTrainedModel MvpDecoder MvpDecoderWrapper MvpEncoder
MvpForCausalLM MvpForConditionalGeneration MvpForQuestionAnswering MvpForSequenceClassification MvpModel
MvpPreTrainedModel NanoChatForCausalLM NanoChatModel NanoChatPreTrainedModel Nemotron3DiarizationAudioModel
Nemotron3DiarizationForAudioFrameClassification Nemotron3DiarizationModel Nemotron3DiarizationPreTrainedModel
Nemotron3_5AsrForRNNT Nemotron3_5AsrPreTrainedModel Nemotron3_5TranscribeAsrAudioModel
Nemotron3_5TranscribeAudioModel Nemotron3_5TranscribeForConditionalGeneration Nemotron3_5TranscribeModel
Nemotron3_5TranscribePreTrainedModel Nemotron3_5TranscribeWordTimestampModel NemotronAsrStreamingEncoder
NemotronAsrStreamingForRNNT NemotronAsrStreamingPreTrainedModel NemotronForCausalLM NemotronForQuestionAnswering
NemotronForSequenceClassification NemotronForTokenClassification NemotronHForCausalLM NemotronHModel
NemotronHPreTrainedModel NemotronH_Omni_Reasoning_V3 NemotronH_Omni_Reasoning_V3PreTrainedModel NemotronModel
NemotronPreTrainedModel NeoMMEForMaskedLM NeoMMEForRetrieval NeoMMEModel NeoMMEPreTrainedModel NeuCodecModel
NeuCodecPreTrainedModel NllbMoeDecoder NllbMoeEncoder NllbMoeForConditionalGeneration NllbMoeModel
NllbMoePreTrainedModel NomicBertForMaskedLM NomicBertForSequenceClassification NomicBertForTokenClassification
NomicBertModel NomicBertPreTrainedModel NystromformerForMaskedLM NystromformerForMultipleChoice
NystromformerForQuestionAnswering NystromformerForSequenceClassification NystromformerForTokenClassification
NystromformerModel NystromformerPreTrainedModel OPTDecoder OPTForCausalLM OPTForQuestionAnswering
OPTForSequenceClassification OPTModel OPTPreTrainedModel Olmo2ForCausalLM Olmo2ForSequenceClassification Olmo2Model
Olmo2PreTrainedModel Olmo3ForCausalLM Olmo3ForSequenceClassification Olmo3Model Olmo3PreTrainedModel OlmoForCausalLM
OlmoForSequenceClassification OlmoHybridForCausalLM OlmoHybridModel OlmoHybridPreTrainedModel OlmoModel
OlmoPreTrainedModel OlmoeForCausalLM OlmoeModel OlmoePreTrainedModel OmDetTurboDecoder OmDetTurboForObjectDetection
OmDetTurboPreTrainedModel OmniASRAudioModel OmniASRCTCModel OmniASRCTCPreTrainedModel OmniASRForCTC
OmniASRForConditionalGeneration OmniASRModel OmniASRPreTrainedModel OneFormerForUniversalSegmentation OneFormerModel
OneFormerPreTrainedModel OpenAIGPTDoubleHeadsModel OpenAIGPTForSequenceClassification OpenAIGPTLMHeadModel
OpenAIGPTModel OpenAIGPTPreTrainedModel OpenAIPrivacyFilterForTokenClassification OpenAIPrivacyFilterModel
OpenAIPrivacyFilterPreTrainedModel Ovis2ForConditionalGeneration Ovis2Model Ovis2PreTrainedModel Ovis2VisionModel
OwlViTForObjectDetection OwlViTModel OwlViTPreTrainedModel OwlViTTextModel OwlViTTextTransformer OwlViTVisionModel
OwlViTVisionTransformer Owlv2ForObjectDetection Owlv2Model Owlv2PreTrainedModel Owlv2TextModel Owlv2TextTransformer
Owlv2VisionModel Owlv2VisionTransformer PI0ForConditionalGeneration PI0Model PI0PreTrainedModel PLBartDecoder
PLBartDecoderWrapper PLBartEncoder PLBartForCausalLM PLBartForConditionalGeneration PLBartForSequenceClassification
PLBartModel PLBartPreTrainedModel PPDocLayoutV2Decoder PPDocLayoutV2ForObjectDetection PPDocLayoutV2HybridEncoder
PPDocLayoutV2Model PPDocLayoutV2PreTrainedModel PPDocLayoutV2ReadingOrder PPDocLayoutV3Decoder
PPDocLayoutV3ForObjectDetection PPDocLayoutV3HybridEncoder PPDocLayoutV3Model PPDocLayoutV3PreTrainedModel
PPDocLayoutV4Decoder PPDocLayoutV4ForObjectDetection PPDocLayoutV4HybridEncoder PPDocLayoutV4Model
PPDocLayoutV4PreTrainedModel PPFormulaNetForConditionalGeneration PPFormulaNetModel PPFormulaNetPreTrainedModel
PPFormulaNetTextModel PPFormulaNetVisionModel PPLCNetBackbone PPLCNetEncoder PPLCNetForImageClassification
PPLCNetPreTrainedModel PPLCNetV3Backbone PPLCNetV3Encoder PPLCNetV3PreTrainedModel PPLCNetV4Backbone
PPLCNetV4Encoder PPLCNetV4PreTrainedModel PPOCRV5MobileDetForObjectDetection PPOCRV5MobileDetModel
PPOCRV5MobileDetPreTrainedModel PPOCRV5MobileRecEncoderWithSVTR PPOCRV5MobileRecForTextRecognition
PPOCRV5MobileRecModel PPOCRV5MobileRecPreTrainedModel PPOCRV5ServerDetForObjectDetection PPOCRV5ServerDetModel
PPOCRV5ServerDetPreTrainedModel PPOCRV5ServerRecEncoderWithSVTR PPOCRV5ServerRecForTextRecognition
PPOCRV5ServerRecModel PPOCRV5ServerRecPreTrainedModel PPOCRV6MediumDetForObjectDetection PPOCRV6MediumDetModel
PPOCRV6MediumDetPreTrainedModel PPOCRV6SmallDetForObjectDetection PPOCRV6SmallDetModel
PPOCRV6SmallDetPreTrainedModel PPOCRV6SmallRecEncoderWithSVTR PPOCRV6SmallRecForTextRecognition PPOCRV6SmallRecModel
PPOCRV6SmallRecPreTrainedModel PPOCRV6TinyRecForTextRecognition PPOCRV6TinyRecModel PPOCRV6TinyRecPreTrainedModel
PaddleOCRTextModel PaddleOCRVLForConditionalGeneration PaddleOCRVLModel PaddleOCRVLPreTrainedModel
PaddleOCRVisionModel PaddleOCRVisionTransformer PaliGemmaForConditionalGeneration PaliGemmaModel
PaliGemmaPreTrainedModel ParakeetEncoder ParakeetForCTC ParakeetForRNNT ParakeetForTDT ParakeetPreTrainedModel
PatchTSMixerEncoder PatchTSMixerForPrediction PatchTSMixerForPretraining PatchTSMixerForRegression
PatchTSMixerForTimeSeriesClassification PatchTSMixerModel PatchTSMixerPreTrainedModel PatchTSTEncoder
PatchTSTForClassification PatchTSTForPrediction PatchTSTForPretraining PatchTSTForRegression PatchTSTModel
PatchTSTPreTrainedModel PeAudioEncoder PeAudioFrameLevelModel PeAudioModel PeAudioPreTrainedModel
PeAudioVideoEncoder PeAudioVideoModel PeAudioVideoPreTrainedModel PeVideoEncoder PeVideoModel PeVideoPreTrainedModel
PegasusDecoder PegasusDecoderWrapper PegasusEncoder PegasusForCausalLM PegasusForConditionalGeneration PegasusModel
PegasusPreTrainedModel PegasusXDecoder PegasusXDecoderWrapper PegasusXEncoder PegasusXForConditionalGeneration
PegasusXModel PegasusXPreTrainedModel PerceiverForImageClassificationConvProcessing
PerceiverForImageClassificationFourier PerceiverForImageClassificationLearned PerceiverForMaskedLM
PerceiverForMultimodalAutoencoding PerceiverForOpticalFlow PerceiverForSequenceClassification PerceiverModel
PerceiverPreTrainedModel PerceptionLMForConditionalGeneration PerceptionLMModel PerceptionLMPreTrainedModel
PersimmonForCausalLM PersimmonForSequenceClassification PersimmonForTokenClassification PersimmonModel
PersimmonPreTrainedModel Phi3ForCausalLM Phi3ForSequenceClassification Phi3ForTokenClassification Phi3Model
Phi3PreTrainedModel Phi4MultimodalAudioModel Phi4MultimodalAudioPreTrainedModel Phi4MultimodalForCausalLM
Phi4MultimodalModel Phi4MultimodalPreTrainedModel Phi4MultimodalVisionModel Phi4MultimodalVisionPreTrainedModel
PhiForCausalLM PhiForSequenceClassification PhiForTokenClassification PhiModel PhiPreTrainedModel PhimoeForCausalLM
PhimoeForSequenceClassification PhimoeModel PhimoePreTrainedModel Pix2StructForConditionalGeneration
Pix2StructPreTrainedModel Pix2StructTextModel Pix2StructVisionModel PixioBackbone PixioModel PixioPreTrainedModel
PixtralPreTrainedModel PixtralVisionModel PocketTTSAudioTokenizerDecoderModel PocketTTSAudioTokenizerEncoderModel
PocketTTSAudioTokenizerModel PocketTTSAudioTokenizerPreTrainedModel PocketTTSForConditionalGeneration PocketTTSModel
PocketTTSPreTrainedModel PoolFormerForImageClassification PoolFormerModel PoolFormerPreTrainedModel
Pop2PianoForConditionalGeneration Pop2PianoPreTrainedModel Pop2PianoStack PretrainedBartModel PretrainedFSMTModel
PromptDepthAnythingForDepthEstimation PromptDepthAnythingPreTrainedModel ProphetNetDecoder ProphetNetDecoderWrapper
ProphetNetEncoder ProphetNetForCausalLM ProphetNetForConditionalGeneration ProphetNetModel ProphetNetPreTrainedModel
PvtForImageClassification PvtModel PvtPreTrainedModel PvtV2Backbone PvtV2ForImageClassification PvtV2Model
PvtV2PreTrainedModel QianfanOCRForConditionalGeneration QianfanOCRModel QianfanOCRPreTrainedModel
QianfanOCRVisionModel QianfanOCRVisionPreTrainedModel Qwen2AudioEncoder Qwen2AudioForConditionalGeneration
Qwen2AudioModel Qwen2AudioPreTrainedModel Qwen2ForCausalLM Qwen2ForQuestionAnswering Qwen2ForSequenceClassification
Qwen2ForTokenClassification Qwen2Model Qwen2MoeForCausalLM Qwen2MoeForQuestionAnswering
Qwen2MoeForSequenceClassification Qwen2MoeForTokenClassification Qwen2MoeModel Qwen2MoePreTrainedModel
Qwen2PreTrainedModel Qwen2VLForConditionalGeneration Qwen2VLModel Qwen2VLPreTrainedModel Qwen2VLTextModel
Qwen2VisionTransformerPretrainedModel Qwen2_5OmniAudioEncoder Qwen2_5OmniForConditionalGeneration
Qwen2_5OmniPreTrainedModel Qwen2_5OmniPreTrainedModelForConditionalGeneration
Qwen2_5OmniTalkerForConditionalGeneration Qwen2_5OmniTalkerModel Qwen2_5OmniThinkerForConditionalGeneration
Qwen2_5OmniThinkerModel Qwen2_5OmniThinkerTextModel Qwen2_5OmniToken2WavBigVGANModel Qwen2_5OmniToken2WavDiTModel
Qwen2_5OmniToken2WavModel Qwen2_5OmniVisionEncoder Qwen2_5_VLForConditionalGeneration Qwen2_5_VLModel
Qwen2_5_VLPreTrainedModel Qwen2_5_VLTextModel Qwen2_5_VisionTransformerPretrainedModel Qwen3ASREncoder
Qwen3ASRForConditionalGeneration Qwen3ASRForTokenClassification Qwen3ASRModel Qwen3ASRPreTrainedModel
Qwen3ForCausalLM Qwen3ForQuestionAnswering Qwen3ForSequenceClassification Qwen3ForTokenClassification Qwen3Model
Qwen3MoeForCausalLM Qwen3MoeForQuestionAnswering Qwen3MoeForSequenceClassification Qwen3MoeForTokenClassification
Qwen3MoeModel Qwen3MoePreTrainedModel Qwen3NextForCausalLM Qwen3NextForQuestionAnswering
Qwen3NextForSequenceClassification Qwen3NextForTokenClassification Qwen3NextModel Qwen3NextPreTrainedModel
Qwen3OmniMoeAudioEncoder Qwen3OmniMoeCode2Wav Qwen3OmniMoeCode2WavDecoderBlock Qwen3OmniMoeCode2WavTransformerModel
Qwen3OmniMoeForConditionalGeneration Qwen3OmniMoePreTrainedModel Qwen3OmniMoePreTrainedModelForConditionalGeneration
Qwen3OmniMoeTalkerCodePredictorModel Qwen3OmniMoeTalkerCodePredictorModelForConditionalGeneration
Qwen3OmniMoeTalkerForConditionalGeneration Qwen3OmniMoeTalkerModel Qwen3OmniMoeThinkerForConditionalGeneration
Qwen3OmniMoeThinkerModel Qwen3OmniMoeThinkerTextModel Qwen3OmniMoeThinkerTextPreTrainedModel
Qwen3OmniMoeVisionEncoder Qwen3PreTrainedModel Qwen3VLForConditionalGeneration Qwen3VLModel
Qwen3VLMoeForConditionalGeneration Qwen3VLMoeModel Qwen3VLMoePreTrainedModel Qwen3VLMoeTextModel
Qwen3VLMoeVisionModel Qwen3VLPreTrainedModel Qwen3VLTextModel Qwen3VLVisionModel Qwen3_5ForCausalLM
Qwen3_5ForConditionalGeneration Qwen3_5ForSequenceClassification Qwen3_5ForTokenClassification Qwen3_5Model
Qwen3_5MoeForCausalLM Qwen3_5MoeForConditionalGeneration Qwen3_5MoeModel Qwen3_5MoePreTrainedModel
Qwen3_5MoeTextModel Qwen3_5MoeVisionModel Qwen3_5PreTrainedModel Qwen3_5TextForSequenceClassification
Qwen3_5TextModel Qwen3_5VisionModel Qwen4ExpForCausalLM Qwen4ExpForConditionalGeneration Qwen4ExpModel
Qwen4ExpPreTrainedModel Qwen4ExpTextModel Qwen4ExpVisionModel RTDetrDecoder RTDetrForObjectDetection
RTDetrHybridEncoder RTDetrModel RTDetrPreTrainedModel RTDetrResNetBackbone RTDetrResNetPreTrainedModel
RTDetrV2Decoder RTDetrV2ForObjectDetection RTDetrV2HybridEncoder RTDetrV2Model RTDetrV2PreTrainedModel RadioEncoder
RadioModel RadioPreTrainedModel RagModel RagPreTrainedModel RagSequenceForGeneration RagTokenForGeneration
RecurrentGemmaForCausalLM RecurrentGemmaModel RecurrentGemmaPreTrainedModel ReformerForMaskedLM
ReformerForQuestionAnswering ReformerForSequenceClassification ReformerModel ReformerModelWithLMHead
ReformerPreTrainedModel RegNetForImageClassification RegNetModel RegNetPreTrainedModel RemBertForCausalLM
RemBertForMaskedLM RemBertForMultipleChoice RemBertForQuestionAnswering RemBertForSequenceClassification
RemBertForTokenClassification RemBertModel RemBertPreTrainedModel ResNetBackbone ResNetForImageClassification
ResNetModel ResNetPreTrainedModel RfDetrDecoder RfDetrDinov2Backbone RfDetrDinov2Encoder RfDetrDinov2PreTrainedModel
RfDetrForInstanceSegmentation RfDetrForObjectDetection RfDetrModel RfDetrPreTrainedModel RoCBertForCausalLM
RoCBertForMaskedLM RoCBertForMultipleChoice RoCBertForPreTraining RoCBertForQuestionAnswering
RoCBertForSequenceClassification RoCBertForTokenClassification RoCBertModel RoCBertPreTrainedModel
RoFormerForCausalLM RoFormerForMaskedLM RoFormerForMultipleChoice RoFormerForQuestionAnswering
RoFormerForSequenceClassification RoFormerForTokenClassification RoFormerModel RoFormerPreTrainedModel
RobertaForCausalLM RobertaForMaskedLM RobertaForMultipleChoice RobertaForQuestionAnswering
RobertaForSequenceClassification RobertaForTokenClassification RobertaModel RobertaPreLayerNormForCausalLM
RobertaPreLayerNormForMaskedLM RobertaPreLayerNormForMultipleChoice RobertaPreLayerNormForQuestionAnswering
RobertaPreLayerNormForSequenceClassification RobertaPreLayerNormForTokenClassification RobertaPreLayerNormModel
RobertaPreLayerNormPreTrainedModel RobertaPreTrainedModel RwkvForCausalLM RwkvModel RwkvPreTrainedModel SEWDForCTC
SEWDForSequenceClassification SEWDModel SEWDPreTrainedModel SEWForCTC SEWForSequenceClassification SEWModel
SEWPreTrainedModel SLANeXtBackbone SLANeXtForTableRecognition SLANeXtPreTrainedModel SLANeXtSLAHead
SLANeXtVisionEncoder SLANetBackbone SLANetForTableRecognition SLANetPreTrainedModel SLANetSLAHead Sam2HieraDetModel
Sam2Model Sam2PreTrainedModel Sam2VideoModel Sam2VideoPreTrainedModel Sam2VisionModel Sam3DetrDecoder
Sam3DetrEncoder Sam3LiteTextDetrDecoder Sam3LiteTextDetrEncoder Sam3LiteTextMaskDecoder Sam3LiteTextModel
Sam3LiteTextPreTrainedModel Sam3LiteTextTextModel Sam3MaskDecoder Sam3Model Sam3PreTrainedModel Sam3TrackerModel
Sam3TrackerPreTrainedModel Sam3TrackerVideoModel Sam3TrackerVideoPreTrainedModel Sam3ViTModel Sam3VideoModel
Sam3VideoPreTrainedModel Sam3VisionModel SamHQModel SamHQPreTrainedModel SamHQVisionEncoder SamHQVisionModel
SamModel SamPreTrainedModel SamVisionEncoder SamVisionModel Sapiens2Backbone Sapiens2Encoder Sapiens2ForImageMatting
Sapiens2ForNormalEstimation Sapiens2ForPointmapEstimation Sapiens2ForPoseEstimation Sapiens2ForSemanticSegmentation
Sapiens2Model Sapiens2PreTrainedModel SeamlessM4TCodeHifiGan SeamlessM4TDecoder SeamlessM4TEncoder
SeamlessM4TForSpeechToSpeech SeamlessM4TForSpeechToText SeamlessM4TForTextToSpeech SeamlessM4TForTextToText
SeamlessM4TModel SeamlessM4TPreTrainedModel SeamlessM4TSpeechEncoder SeamlessM4TTextToUnitForConditionalGeneration
SeamlessM4TTextToUnitModel SeamlessM4Tv2CodeHifiGan SeamlessM4Tv2Decoder SeamlessM4Tv2Encoder
SeamlessM4Tv2ForSpeechToSpeech SeamlessM4Tv2ForSpeechToText SeamlessM4Tv2ForTextToSpeech SeamlessM4Tv2ForTextToText
SeamlessM4Tv2Model SeamlessM4Tv2PreTrainedModel SeamlessM4Tv2SpeechEncoder SeamlessM4Tv2TextToUnitDecoder
SeamlessM4Tv2TextToUnitForConditionalGeneration SeamlessM4Tv2TextToUnitModel SeedOssForCausalLM
SeedOssForQuestionAnswering SeedOssForSequenceClassification SeedOssForTokenClassification SeedOssModel
SeedOssPreTrainedModel SegGptForImageSegmentation SegGptModel SegGptPreTrainedModel SegformerForImageClassification
SegformerForSemanticSegmentation SegformerModel SegformerPreTrainedModel ShieldGemma2ForImageClassification
Siglip2ForImageClassification Siglip2Model Siglip2PreTrainedModel Siglip2TextModel Siglip2VisionModel
SiglipForImageClassification SiglipModel SiglipPreTrainedModel SiglipTextModel SiglipVisionModel SmolLM3ForCausalLM
SmolLM3ForQuestionAnswering SmolLM3ForSequenceClassification SmolLM3ForTokenClassification SmolLM3Model
SmolLM3PreTrainedModel SmolVLMForConditionalGeneration SmolVLMModel SmolVLMPreTrainedModel SmolVLMVisionTransformer
SolarOpenForCausalLM SolarOpenModel SolarOpenPreTrainedModel Speech2TextDecoder Speech2TextEncoder
Speech2TextForConditionalGeneration Speech2TextModel Speech2TextPreTrainedModel SpeechEncoderDecoderModel
SpeechT5Decoder SpeechT5DecoderWithSpeechPrenet SpeechT5DecoderWithTextPrenet SpeechT5DecoderWithoutPrenet
SpeechT5Encoder SpeechT5EncoderWithSpeechPrenet SpeechT5EncoderWithTextPrenet SpeechT5EncoderWithoutPrenet
SpeechT5ForSpeechToSpeech SpeechT5ForSpeechToText SpeechT5ForTextToSpeech SpeechT5HifiGan SpeechT5Model
SpeechT5PreTrainedModel SplinterForPreTraining SplinterForQuestionAnswering SplinterModel SplinterPreTrainedModel
SqueezeBertForMaskedLM SqueezeBertForMultipleChoice SqueezeBertForQuestionAnswering
SqueezeBertForSequenceClassification SqueezeBertForTokenClassification SqueezeBertModel SqueezeBertPreTrainedModel
StableLmForCausalLM StableLmForSequenceClassification StableLmForTokenClassification StableLmModel
StableLmPreTrainedModel Starcoder2ForCausalLM Starcoder2ForSequenceClassification Starcoder2ForTokenClassification
Starcoder2Model Starcoder2PreTrainedModel Step3p7ForConditionalGeneration Step3p7Model Step3p7PreTrainedModel
Step3p7TextModel Step3p7VisionModel SuperGlueForKeypointMatching SuperGluePreTrainedModel
SuperPointForKeypointDetection SuperPointPreTrainedModel SwiftFormerForImageClassification SwiftFormerModel
SwiftFormerPreTrainedModel Swin2SRForImageSuperResolution Swin2SRModel Swin2SRPreTrainedModel SwinBackbone
SwinEncoder SwinForImageClassification SwinForMaskedImageModeling SwinModel SwinPreTrainedModel Swinv2Backbone
Swinv2ForImageClassification Swinv2ForMaskedImageModeling Swinv2Model Swinv2PreTrainedModel
SwitchTransformersEncoderModel SwitchTransformersForConditionalGeneration SwitchTransformersModel
SwitchTransformersPreTrainedModel SwitchTransformersStack T5EncoderModel T5ForConditionalGeneration
T5ForQuestionAnswering T5ForSequenceClassification T5ForTokenClassification T5Gemma2Decoder T5Gemma2Encoder
T5Gemma2ForConditionalGeneration T5Gemma2ForSequenceClassification T5Gemma2ForTokenClassification T5Gemma2Model
T5Gemma2PreTrainedModel T5Gemma2TextEncoder T5GemmaDecoder T5GemmaEncoder T5GemmaEncoderModel
T5GemmaForConditionalGeneration T5GemmaForSequenceClassification T5GemmaForTokenClassification T5GemmaModel
T5GemmaPreTrainedModel T5Model T5PreTrainedModel T5Stack TableTransformerDecoder TableTransformerEncoder
TableTransformerForObjectDetection TableTransformerModel TableTransformerPreTrainedModel TapasForMaskedLM
TapasForQuestionAnswering TapasForSequenceClassification TapasModel TapasPreTrainedModel TextNetBackbone
TextNetForImageClassification TextNetModel TextNetPreTrainedModel TimeSeriesTransformerDecoder
TimeSeriesTransformerEncoder TimeSeriesTransformerForPrediction TimeSeriesTransformerModel
TimeSeriesTransformerPreTrainedModel TimesFm2_5Model TimesFm2_5ModelForPrediction TimesFm2_5PreTrainedModel
TimesFmModel TimesFmModelForPrediction TimesFmPreTrainedModel TimesformerForVideoClassification TimesformerModel
TimesformerPreTrainedModel TimmBackbone TimmWrapperForImageClassification TimmWrapperModel
TimmWrapperPreTrainedModel Tipsv2DptForDensePrediction Tipsv2DptForDepthEstimation Tipsv2DptForNormalEstimation
Tipsv2DptForSemanticSegmentation Tipsv2DptPreTrainedModel Tipsv2Model Tipsv2PreTrainedModel Tipsv2TextModel
Tipsv2TextPreTrainedModel Tipsv2VisionBackbone Tipsv2VisionEncoder Tipsv2VisionModel Tipsv2VisionPreTrainedModel
TrOCRDecoder TrOCRDecoderWrapper TrOCRForCausalLM TrOCRPreTrainedModel TvpForVideoGrounding TvpModel
TvpPreTrainedModel UMT5EncoderModel UMT5ForConditionalGeneration UMT5ForQuestionAnswering
UMT5ForSequenceClassification UMT5ForTokenClassification UMT5Model UMT5PreTrainedModel UMT5Stack UVDocBackbone
UVDocBridge UVDocModel UVDocPreTrainedModel UdopEncoderModel UdopForConditionalGeneration UdopModel
UdopPreTrainedModel UdopStack UltraVBertForMaskedLM UltraVBertForSequenceClassification
UltraVBertForTokenClassification UltraVBertModel UltraVBertPreTrainedModel UltrabertForMaskedLM
UltrabertForQuestionAnswering UltrabertForSequenceClassification UltrabertForTokenClassification UltrabertModel
UltrabertPreTrainedModel UniSpeechForCTC UniSpeechForPreTraining UniSpeechForSequenceClassification UniSpeechModel
UniSpeechPreTrainedModel UniSpeechSatForAudioFrameClassification UniSpeechSatForCTC UniSpeechSatForPreTraining
UniSpeechSatForSequenceClassification UniSpeechSatForXVector UniSpeechSatModel UniSpeechSatPreTrainedModel
UnivNetModel UnlimitedOcrForConditionalGeneration UnlimitedOcrModel UnlimitedOcrPreTrainedModel
UnlimitedOcrSamVisionEncoder UnlimitedOcrTextModel UnlimitedOcrTextPreTrainedModel UnlimitedOcrVisionEncoder
UnlimitedOcrVisionModel UperNetForSemanticSegmentation UperNetPreTrainedModel VJEPA2ForVideoClassification
VJEPA2Model VJEPA2PreTrainedModel VaultGemmaForCausalLM VaultGemmaModel VaultGemmaPreTrainedModel
ViTForImageClassification ViTForMaskedImageModeling ViTMAEForPreTraining ViTMAEModel ViTMAEPreTrainedModel
ViTMSNForImageClassification ViTMSNModel ViTMSNPreTrainedModel ViTModel ViTPreTrainedModel
VibeVoiceAcousticTokenizerDecoderModel VibeVoiceAcousticTokenizerEncoderModel VibeVoiceAcousticTokenizerModel
VibeVoiceAcousticTokenizerPreTrainedModel VibeVoiceAsrForConditionalGeneration VibeVoiceAsrModel
VibeVoiceAsrPreTrainedModel VibeVoiceForConditionalGeneration VibeVoiceModel VibeVoicePreTrainedModel
VideoLlama3ForConditionalGeneration VideoLlama3Model VideoLlama3PreTrainedModel VideoLlama3VisionModel
VideoLlavaForConditionalGeneration VideoLlavaModel VideoLlavaPreTrainedModel VideoMAEForPreTraining
VideoMAEForVideoClassification VideoMAEModel VideoMAEPreTrainedModel VideoPrismClipModel
VideoPrismForVideoClassification VideoPrismPreTrainedModel VideoPrismTextModel VideoPrismVideoModel
VideoPrismVisionModel VideomtForUniversalSegmentation VideomtPreTrainedModel ViltForImageAndTextRetrieval
ViltForImagesAndTextClassification ViltForMaskedLM ViltForQuestionAnswering ViltForTokenClassification ViltModel
ViltPreTrainedModel VipLlavaForConditionalGeneration VipLlavaModel VipLlavaPreTrainedModel VisionEncoderDecoderModel
VisionTextDualEncoderModel VisualBertForMultipleChoice VisualBertForPreTraining VisualBertForQuestionAnswering
VisualBertForRegionToPhraseAlignment VisualBertForVisualReasoning VisualBertModel VisualBertPreTrainedModel
VitDetBackbone VitDetModel VitDetPreTrainedModel VitMatteForImageMatting VitMattePreTrainedModel VitPoseBackbone
VitPoseBackboneEncoder VitPoseBackbonePreTrainedModel VitPoseForPoseEstimation VitPosePreTrainedModel VitsModel
VitsPreTrainedModel VivitForVideoClassification VivitModel VivitPreTrainedModel VoxtralEncoder
VoxtralForConditionalGeneration VoxtralModel VoxtralPreTrainedModel VoxtralRealtimeEncoder
VoxtralRealtimeForConditionalGeneration VoxtralRealtimeModel VoxtralRealtimePreTrainedModel VoxtralRealtimeTextModel
VoxtralRealtimeTextPreTrainedModel Wav2Vec2BertForAudioFrameClassification Wav2Vec2BertForCTC
Wav2Vec2BertForSequenceClassification Wav2Vec2BertForXVector Wav2Vec2BertModel Wav2Vec2BertPreTrainedModel
Wav2Vec2ConformerForAudioFrameClassification Wav2Vec2ConformerForCTC Wav2Vec2ConformerForPreTraining
Wav2Vec2ConformerForSequenceClassification Wav2Vec2ConformerForXVector Wav2Vec2ConformerModel
Wav2Vec2ConformerPreTrainedModel Wav2Vec2ForAudioFrameClassification Wav2Vec2ForCTC Wav2Vec2ForPreTraining
Wav2Vec2ForSequenceClassification Wav2Vec2ForXVector Wav2Vec2Model Wav2Vec2PreTrainedModel
WavLMForAudioFrameClassification WavLMForCTC WavLMForSequenceClassification WavLMForXVector WavLMModel
WavLMPreTrainedModel WavTokenizerEncoderModel WavTokenizerModel WavTokenizerPreTrainedModel WhisperDecoder
WhisperDecoderWrapper WhisperEncoder WhisperForAudioClassification WhisperForCausalLM
WhisperForConditionalGeneration WhisperModel WhisperPreTrainedModel XCLIPModel XCLIPPreTrainedModel XCLIPTextModel
XCLIPVisionModel XGLMForCausalLM XGLMModel XGLMPreTrainedModel XLMForMultipleChoice XLMForQuestionAnswering
XLMForQuestionAnsweringSimple XLMForSequenceClassification XLMForTokenClassification XLMModel XLMPreTrainedModel
XLMRobertaForCausalLM XLMRobertaForMaskedLM XLMRobertaForMultipleChoice XLMRobertaForQuestionAnswering
XLMRobertaForSequenceClassification XLMRobertaForTokenClassification XLMRobertaModel XLMRobertaPreTrainedModel
XLMRobertaXLForCausalLM XLMRobertaXLForMaskedLM XLMRobertaXLForMultipleChoice XLMRobertaXLForQuestionAnswering
XLMRobertaXLForSequenceClassification XLMRobertaXLForTokenClassification XLMRobertaXLModel
XLMRobertaXLPreTrainedModel XLMWithLMHeadModel XLNetForMultipleChoice XLNetForQuestionAnswering
XLNetForQuestionAnsweringSimple XLNetForSequenceClassification XLNetForTokenClassification XLNetLMHeadModel
XLNetModel XLNetPreTrainedModel Xcodec2Model Xcodec2PreTrainedModel XcodecModel XcodecPreTrainedModel
XmodForCausalLM XmodForMaskedLM XmodForMultipleChoice XmodForQuestionAnswering XmodForSequenceClassification
XmodForTokenClassification XmodModel XmodPreTrainedModel YolosForObjectDetection YolosModel YolosPreTrainedModel
YosoForMaskedLM YosoForMultipleChoice YosoForQuestionAnswering YosoForSequenceClassification
YosoForTokenClassification YosoModel YosoPreTrainedModel YoutuForCausalLM YoutuModel YoutuPreTrainedModel
Zamba2ForCausalLM Zamba2ForSequenceClassification Zamba2Model Zamba2PreTrainedModel ZambaForCausalLM
ZambaForSequenceClassification ZambaModel ZambaPreTrainedModel ZayaForCausalLM ZayaModel ZayaPreTrainedModel
ZoeDepthForDepthEstimation ZoeDepthPreTrainedModel xLSTMForCausalLM xLSTMModel xLSTMPreTrainedModel
""".split())
DIFFUSERS_CLASSES = frozenset("""
AceStepTransformer1DModel AllegroTransformer3DModel AnimaTextConditioner AnyFlowFARTransformer3DModel
AnyFlowTransformer3DModel AsymmetricAutoencoderKL AuraFlowTransformer2DModel AutoencoderDC AutoencoderKL
AutoencoderKLAllegro AutoencoderKLCogVideoX AutoencoderKLCosmos AutoencoderKLFlux2 AutoencoderKLHunyuanImage
AutoencoderKLHunyuanImageRefiner AutoencoderKLHunyuanVideo AutoencoderKLHunyuanVideo15 AutoencoderKLKVAE
AutoencoderKLKVAEAudio AutoencoderKLKVAEVideo AutoencoderKLLTX2Audio AutoencoderKLLTX2Video AutoencoderKLLTXVideo
AutoencoderKLMagvit AutoencoderKLMiniMaxH3 AutoencoderKLMiniMaxH3Audio AutoencoderKLMochi AutoencoderKLQwenImage
AutoencoderKLQwenImage21 AutoencoderKLTemporalDecoder AutoencoderKLWan AutoencoderOobleck AutoencoderRAE
AutoencoderSAME AutoencoderTiny AutoencoderVidTok BriaFibo2Transformer2DModel BriaFiboTransformer2DModel
BriaTransformer2DModel ChromaTransformer2DModel ChronoEditTransformer3DModel CogVideoXTransformer3DModel
CogView3PlusTransformer2DModel CogView4Transformer2DModel ConsisIDTransformer3DModel ConsistencyDecoderVAE
ControlNetModel ControlNetUnionModel ControlNetXSAdapter Cosmos3AVAEAudioTokenizer Cosmos3OmniTransformer
CosmosControlNetModel CosmosTransformer3DModel DiTTransformer2DModel DreamLiteTransformer2DModel DreamLiteUNetModel
EasyAnimateTransformer3DModel ErnieImageTransformer2DModel Flux2Transformer2DModel Flux3Transformer2DModel
FluxControlNetModel FluxMultiControlNetModel FluxTransformer2DModel GlmImageTransformer2DModel
HeliosTransformer3DModel HiDreamImageTransformer2DModel HunyuanDiT2DControlNetModel HunyuanDiT2DModel
HunyuanDiT2DMultiControlNetModel HunyuanImageTransformer2DModel HunyuanVideo15Transformer3DModel
HunyuanVideoFramepackTransformer3DModel HunyuanVideoTransformer3DModel I2VGenXLUNet Ideogram4Transformer2DModel
JoyImageEditPlusTransformer3DModel JoyImageEditTransformer3DModel Kandinsky3UNet Kandinsky5Transformer3DModel
Kandinsky6SRLatentUpscalerBank Kandinsky6SRTransformer3DModel Kandinsky6SRVAE Kandinsky6Transformer3DModel
Krea2Transformer2DModel LTX2VideoDiffusionDecoderModel LTX2VideoTransformer3DModel LTXVideoTransformer3DModel
LatteTransformer3DModel LegacyModelMixin LongCatAudioDiTTransformer LongCatAudioDiTVae
LongCatImageTransformer2DModel Lumina2Transformer2DModel LuminaNextDiT2DModel MMAudioVAE MMAudioVocoder
MiniMaxH3Transformer3DModel MiniMaxMusic3ConditionEncoder MiniMaxMusic3RVQDepthDecoder
MiniMaxMusic3Transformer1DModel MiniMaxMusic3Vocoder MochiTransformer3DModel MotifVideoTransformer3DModel
MotionAdapter MultiAdapter MultiControlNetModel MultiControlNetUnionModel NucleusMoEImageTransformer2DModel
OmniGenTransformer2DModel OvisImageTransformer2DModel PRXTransformer2DModel PixArtTransformer2DModel
PriorTransformer QwenImage21Transformer2DModel QwenImageControlNetModel QwenImageMultiControlNetModel
QwenImageTransformer2DModel RFD4ProteinaAutoencoder RFD4ProteinaTransformer SD3ControlNetModel
SD3MultiControlNetModel SD3Transformer2DModel SanaControlNetModel SanaTransformer2DModel SanaVideoTransformer3DModel
SanaWMLTX2RefinerTransformer3DModel SanaWMTransformer3DModel SkyReelsV2Transformer3DModel SparseControlNetModel
StableAudio3DiTModel StableAudioDiTModel StableCascadeUNet T2IAdapter T5FilmDecoder Transformer2DModel
TransformerTemporalModel UNet1DModel UNet2DConditionModel UNet2DModel UNet3DConditionModel UNetControlNetXSModel
UNetMotionModel UNetSpatioTemporalConditionModel UVit2DModel VQModel WanAnimate2Transformer3DModel
WanAnimateTransformer3DModel WanTransformer3DModel WanVACETransformer3DModel ZImageControlNetModel
ZImageTransformer2DModel
""".split())
# fmt: on
